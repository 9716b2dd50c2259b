/**
 * Middleware: factories for agent `use` lists, their config schemas, and the contract.
 * Pure modules: the same code runs in the workflow.
 */
export { retry, retryMiddleware, RetryConfigSchema, DEFAULT_RETRY_STATUSES } from './retry';
export type { RetryConfig } from './retry';
export { fallback, fallbackMiddleware, FallbackConfigSchema, DEFAULT_FALLBACK_STATUSES, LASTING_STATUSES } from './fallback';
export type { FallbackConfig } from './fallback';
export { softToolErrors, softToolErrorsMiddleware, SoftToolErrorsConfigSchema } from './soft-tool-errors';
export type { SoftToolErrorsConfig } from './soft-tool-errors';
export { toolApproval, toolApprovalMiddleware, ToolApprovalConfigSchema, DENIED_MESSAGE, JUDGE_DENIED_MESSAGE, JUDGE_INSTRUCTIONS, turnUserTexts } from './tool-approval';
export type { ToolApprovalConfig } from './tool-approval';
export { budget, budgetMiddleware, BudgetConfigSchema, BUDGET_METADATA_KEY } from './budget';
export type { BudgetConfig } from './budget';
export { BUILTIN_MIDDLEWARE, instantiateMiddleware, middlewareNames, registerMiddleware, registeredMiddleware } from './registry';
export { composeStage } from './compose';
export type { ContributedTool, MiddlewareContext, MiddlewareDefinition, MiddlewareHooks, ModelCallParams, ToolCallParams, GenerateParams, GenerateOutcome } from './types';
export { ToolInterrupt, toolFail } from '../core/interrupts';
