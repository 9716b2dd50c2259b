/** The tool loop as data: every case in spec/loop-cases.yaml is one real run. */
import { runSpecFile } from './support/spec-runner';

runSpecFile('loop-cases.yaml');
