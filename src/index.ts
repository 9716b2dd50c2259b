/**
 * keel-agents: a durable agent runtime on Temporal. Public API (Node side).
 */
export { defineAgent, defineModel, defineTool } from './define';
export type { Agent, AgentOptions, AgentSessionMode, Model, ModelContext, Tool, ToolContext, ToolOptions } from './define';
export { Registry } from './registry';
export { KeelClient, RunHandle, runErrorOf } from './client/keel-client';
export type { DecideOptions, TaskView } from './client/keel-client';
export type { HoldView } from './client/holds';
export { SessionHandle } from './client/session-handle';
export type { SendOptions } from './client/session-handle';
export { InvokeOutputSchema, SnapshotSchema, SessionStateSchema, sessionWorkflowId } from './core/session';
export type { InvokeOutput, Snapshot, SessionState } from './core/session';
export type { StartRunOptions } from './client/keel-client';
export { KeelError, UNCLASSIFIED } from './core/errors';
export type { KeelErrorDetails } from './core/errors';
export { STATUS_NAMES, statusFromHttp } from './core/status';
export type { StatusName } from './core/status';
export { MessageSchema, ModelRequestSchema, ModelResponseSchema, PartSchema, UsageSchema, messageText } from './core/messages';
export type { FinishReason, Message, ModelRequest, ModelResponse, Part, ToolDefinition, Usage } from './core/messages';
export { AgentSpecSchema, RunInputSchema, RunResultSchema, RunStatusSchema } from './core/run';
export type { AgentSpec, Interrupt, MiddlewareRef, MiddlewareRefInput, RunInput, RunResult, RunState, RunStatus } from './core/run';
export { ConfigError, defineConfig, loadConfig, parseConfig } from './config/load';
export type { KeelConfig, KeelConfigInput } from './config/schema';
export { errorReply, scriptedModel, textReply, toolCallReply } from './models/scripted';
export type { ScriptedModel, ScriptedReply } from './models/scripted';
export { openAICompatibleModel } from './models/openai-compatible';
export { aiSdkModel } from './models/ai-sdk';
export type { AiSdkLanguageModel, AiSdkModelOptions } from './models/ai-sdk';
export { anthropicModel } from './models/anthropic';
export type { AnthropicOptions } from './models/anthropic';
export {
  agents,
  artifacts,
  budget,
  contextCompression,
  defineMiddleware,
  fallback,
  filesystem,
  registerMiddleware,
  replaceFinalMessage,
  retry,
  skills,
  softToolErrors,
  toolApproval,
  DEFAULT_FALLBACK_STATUSES,
  DEFAULT_RETRY_STATUSES,
  LASTING_STATUSES,
  BUDGET_METADATA_KEY,
  resolveCompressedHistory,
} from './middleware';
export type {
  AgentsConfig,
  ArtifactsConfig,
  BudgetConfig,
  ContextCompressionConfig,
  FallbackConfig,
  FilesystemConfig,
  GenerateOutcome,
  GenerateParams,
  MiddlewareContext,
  MiddlewareDefinition,
  MiddlewareFactory,
  MiddlewareHooks,
  ModelCallParams,
  RetryConfig,
  SkillsConfig,
  SoftToolErrorsConfig,
  ToolApprovalConfig,
  ToolCallParams,
} from './middleware';
export { DecisionSchema, toolFail } from './core/interrupts';
export type { Decision, HoldPolicy, ResumePayload } from './core/interrupts';
export { RunStoppedError, ToolFailure } from './core/errors';
export { ArtifactSchema, artifactText } from './core/artifacts';
export type { Artifact } from './core/artifacts';
export type { OpenAICompatibleOptions } from './models/openai-compatible';
export { createKeelWorker } from './worker/create-worker';
export type { KeelWorkerOptions } from './worker/create-worker';
export { loadRegistry } from './worker/load-registry';
export { connectClient, connectWorker } from './worker/connect';
export { findTemporalBinary, startDevServer, waitForServer } from './server/dev-server';
export {
  statusQuery,
  messagesQuery,
  snapshotQuery,
  invokeUpdate,
  waitForSnapshotUpdate,
  abortSessionUpdate,
  GENERATE_WORKFLOW,
  SESSION_WORKFLOW,
} from './workflows/definitions';
