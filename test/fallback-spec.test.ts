/** Fallback as data: every case in spec/fallback-cases.yaml is one real run. */
import { runSpecFile } from './support/spec-runner';

runSpecFile('fallback-cases.yaml');
