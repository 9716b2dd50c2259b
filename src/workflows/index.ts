/**
 * Workflow entry point for the worker bundle. Deterministic code only: no Node built-ins,
 * no I/O, no clock or randomness except through @temporalio/workflow.
 */
export { generateWorkflow } from './generate';
export { sessionWorkflow } from './session';
export { keelHoldNotice } from '../features/catalog';
export { keelForkCheck } from './fork-check';
export { keelEvalSuite } from '../features/catalog';
export { keelSpendLedger } from '../features/catalog';
