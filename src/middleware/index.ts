/**
 * keel-agents/middleware: what a middleware author writes against: `defineMiddleware` and the
 * hook types, the context a hook gets, holds and tool answers, the errors a hook may throw, and
 * the built-in factories with their config schemas (to compose or extend them). Pure modules:
 * the same code runs in the workflow.
 */
export { defineMiddleware } from './define-middleware';
export type { MiddlewareFactory } from './define-middleware';
export type { Principal } from '../core/principal';
export { registerMiddleware } from '../features/catalog';
export { replaceFinalMessage } from './outcome';
export { retry, RetryConfigSchema, DEFAULT_RETRY_STATUSES } from '../features/retry/retry';
export type { RetryConfig } from '../features/retry/retry';
export { fallback, FallbackConfigSchema, DEFAULT_FALLBACK_STATUSES, LASTING_STATUSES } from '../features/fallback/fallback';
export type { FallbackConfig } from '../features/fallback/fallback';
export { softToolErrors, SoftToolErrorsConfigSchema } from '../features/soft-tool-errors/soft-tool-errors';
export type { SoftToolErrorsConfig } from '../features/soft-tool-errors/soft-tool-errors';
export { toolApproval, ToolApprovalConfigSchema } from '../features/tool-approval/tool-approval';
export type { ToolApprovalConfig } from '../features/tool-approval/tool-approval';
export { budget, BudgetConfigSchema, BUDGET_METADATA_KEY } from '../features/budget/budget';
export type { BudgetConfig } from '../features/budget/budget';
export { artifacts, ArtifactsConfigSchema } from '../features/artifacts/artifacts';
export type { ArtifactsConfig } from '../features/artifacts/artifacts';
export { agents, AgentsConfigSchema } from '../features/agents/agents';
export type { AgentsConfig } from '../features/agents/agents';
export { filesystem, FilesystemConfigSchema } from '../features/filesystem/filesystem';
export type { FilesystemConfig } from '../features/filesystem/filesystem';
export { skills, SkillsConfigSchema } from '../features/skills/skills';
export type { SkillsConfig } from '../features/skills/skills';
export { contextCompression, ContextCompressionConfigSchema } from '../features/context-compression/context-compression';
export type { ContextCompressionConfig } from '../features/context-compression/context-compression';
export { resolveCompressedHistory } from '../features/context-compression/view';
export type { ActivityCall, ActivityDoor } from './activity-door';
export { runArtifacts } from './run-capability';
export type { CapabilityCall, RunCapability } from './run-capability';
export type { ArtifactStore } from '../core/artifacts';
export { backgroundTasks, sessionRuns, subAgentRuns } from '../features/agents/capabilities';
export type { AgentRunner, AgentRunOptions, AgentRunOutcome, SessionRunOptions, SessionRunner, TaskControl } from '../features/agents/capabilities';
export { treeLedger } from '../features/budget/ledger-door';
export type { TreeLedger } from '../features/budget/ledger-door';
export type {
  ContributedTool,
  ContributedToolContext,
  GenerateOutcome,
  GenerateParams,
  MiddlewareContext,
  MiddlewareDefinition,
  MiddlewareHooks,
  ModelCallParams,
  Next,
  ToolCallParams,
} from './types';
export { toolFail } from '../core/interrupts';
export { defineHold } from '../core/holds';
export type { HoldKind, ResumePayload } from '../core/holds';
export { RunStoppedError, ToolFailure } from '../core/errors';
export type { AgentSpec, MiddlewareRef } from '../core/run';
