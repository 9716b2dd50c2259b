/**
 * Middleware: the contract (`defineMiddleware` and the hook types), the built-in factories
 * for agent `use` lists, and their config schemas. Pure modules: the same code runs in the
 * workflow.
 */
export { defineMiddleware, isMiddlewareFactory } from './define-middleware';
export type { MiddlewareFactory } from './define-middleware';
export { replaceFinalMessage } from './outcome';
export { retry, RetryConfigSchema, DEFAULT_RETRY_STATUSES } from './retry';
export type { RetryConfig } from './retry';
export { fallback, FallbackConfigSchema, DEFAULT_FALLBACK_STATUSES, LASTING_STATUSES } from './fallback';
export type { FallbackConfig } from './fallback';
export { softToolErrors, SoftToolErrorsConfigSchema } from './soft-tool-errors';
export type { SoftToolErrorsConfig } from './soft-tool-errors';
export { toolApproval, ToolApprovalConfigSchema, DENIED_MESSAGE, JUDGE_DENIED_MESSAGE, JUDGE_INSTRUCTIONS, turnUserTexts } from './tool-approval';
export type { ToolApprovalConfig } from './tool-approval';
export { budget, BudgetConfigSchema, BUDGET_METADATA_KEY } from './budget';
export type { BudgetConfig } from './budget';
export { artifacts, artifactsListing, ArtifactsConfigSchema, ARTIFACTS_LISTING_MARKER } from './artifacts';
export type { ArtifactsConfig } from './artifacts';
export { agents, AgentsConfigSchema, AGENTS_INSTRUCTIONS_MARKER, DEFAULT_TOOL_PREFIX, delegationToolName, sharedToolName } from './agents';
export type { AgentsConfig } from './agents';
export { filesystem, FilesystemConfigSchema, FILESYSTEM_MESSAGE_MARKER, UNCHANGED_STUB } from './filesystem';
export type { FilesystemConfig } from './filesystem';
export { skills, skillsCatalog, SkillsConfigSchema, SKILLS_CATALOG_MARKER, SKILL_ACTIVATION } from './skills';
export type { SkillsConfig } from './skills';
export { contextCompression, ContextCompressionConfigSchema } from './context-compression';
export type { ContextCompressionConfig } from './context-compression';
export { resolveCompressedHistory, DEDUPE_NOTICE, DROP_NOTICE, SUMMARY_PREFIX } from './compression/view';
export { injectSystemText } from './system-text';
export { BUILTIN_MIDDLEWARE, instantiateMiddleware, middlewareNames, registerExportedMiddleware, registerMiddleware, registeredMiddleware } from './registry';
export type { MiddlewareStage } from './registry';
export { composeStage, composeToolChain } from './compose';
export type {
  ContributedTool,
  ContributedToolContext,
  GenerateOutcome,
  GenerateParams,
  AgentRunOptions,
  AgentRunOutcome,
  ArtifactStore,
  SessionTurnOptions,
  TaskControl,
  MiddlewareContext,
  MiddlewareDefinition,
  MiddlewareHooks,
  ModelCallParams,
  Next,
  ToolCallParams,
} from './types';
export { toolFail } from '../core/interrupts';
export type { HoldPolicy, ResumePayload } from '../core/interrupts';
export { RunStoppedError, ToolFailure } from '../core/errors';
