/** Retry as data: every case in spec/retry-cases.yaml is one real run. */
import { runSpecFile } from './support/spec-runner';

runSpecFile('retry-cases.yaml');
