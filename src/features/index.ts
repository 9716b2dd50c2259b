/**
 * keel-agents/middleware: what a middleware author writes against: `defineMiddleware` and the
 * hook types, the context a hook gets, holds and tool answers, the errors a hook may throw, and
 * the built-in factories with their config schemas (to compose or extend them). Pure modules:
 * the same code runs in the workflow.
 */
export { defineMiddleware } from '../middleware/define-middleware';
export type { MiddlewareFactory } from '../middleware/define-middleware';
export type { Principal } from '../core/principal';
export { registerMiddleware } from './catalog';
export { replaceFinalMessage } from '../middleware/outcome';
export { retry, RetryConfigSchema, DEFAULT_RETRY_STATUSES } from './retry/retry';
export type { RetryConfig } from './retry/retry';
export { fallback, FallbackConfigSchema, DEFAULT_FALLBACK_STATUSES, LASTING_STATUSES } from './fallback/fallback';
export type { FallbackConfig } from './fallback/fallback';
export { softToolErrors, SoftToolErrorsConfigSchema } from './soft-tool-errors/soft-tool-errors';
export type { SoftToolErrorsConfig } from './soft-tool-errors/soft-tool-errors';
export { toolApproval, ToolApprovalConfigSchema } from './tool-approval/tool-approval';
export type { ToolApprovalConfig } from './tool-approval/tool-approval';
export { budget, BudgetConfigSchema, BUDGET_METADATA_KEY } from './budget/budget';
export type { BudgetConfig } from './budget/budget';
export { artifacts, ArtifactsConfigSchema } from './artifacts/artifacts';
export type { ArtifactsConfig } from './artifacts/artifacts';
export { agents, AgentsConfigSchema } from './agents/agents';
export type { AgentsConfig } from './agents/agents';
export { filesystem, FilesystemConfigSchema } from './filesystem/filesystem';
export type { FilesystemConfig } from './filesystem/filesystem';
export { skills, SkillsConfigSchema } from './skills/skills';
export type { SkillsConfig } from './skills/skills';
export { contextCompression, ContextCompressionConfigSchema } from './context-compression/context-compression';
export type { ContextCompressionConfig } from './context-compression/context-compression';
export { resolveCompressedHistory } from './context-compression/view';
export type { ActivityCall, ActivityDoor } from '../middleware/activity-door';
export type { ArtifactStore } from '../core/artifacts';
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
} from '../middleware/types';
export { toolFail } from '../core/interrupts';
export { defineHold } from '../core/holds';
export type { HoldKind, ResumePayload } from '../core/holds';
export { RunStoppedError, ToolFailure } from '../core/errors';
export type { AgentSpec, MiddlewareRef } from '../core/run';
