/** Budget as data: every case in spec/budget-cases.yaml is one real run. */
import { runSpecFile } from './support/spec-runner';

runSpecFile('budget-cases.yaml');
