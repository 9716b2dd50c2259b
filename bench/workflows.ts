/** Workflow bundle entry of the benchmark: keel's generate workflow plus the baseline. */
export { generateWorkflow } from '../src/workflows/generate';
export { bareWaitingWorkflow, baselineWorkflow, keelShapedWorkflow } from './baseline-workflow';
