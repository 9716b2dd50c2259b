/** SoftToolErrors as data: every case in spec/soft-tool-errors-cases.yaml is one real run. */
import { runSpecFile } from './support/spec-runner';

runSpecFile('soft-tool-errors-cases.yaml');
