/** ToolApproval as data: every case in spec/tool-approval-cases.yaml is one real run. */
import { runSpecFile } from './support/spec-runner';

runSpecFile('tool-approval-cases.yaml');
