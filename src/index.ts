/**
 * keel-agents: a durable agent runtime on Temporal. What an application writes against:
 * agents, tools and models; the built-in middleware; the client; the worker; config; errors.
 * A middleware author's contract is `keel-agents/middleware`, the workflow entry
 * `keel-agents/workflow`, the wire contract for other clients `keel-agents/protocol`, and a
 * project's own test helpers `keel-agents/testing`. Node side.
 */
export { defineAgent, defineModel, defineTool } from './define';
export type { Agent, AgentLocalCalls, AgentOptions, AgentOutputOption, AgentSessionMode, Model, ModelContext, Tool, ToolContext, ToolOptions } from './define';
export { DEFAULT_OUTPUT_RETRIES, OutputSpecSchema } from './core/output';
export type { JsonSchemaObject, OutputOption, OutputSpec, OutputSpecInput } from './core/output';
export { Registry } from './registry';

export { KeelClient, RunHandle, runErrorOf } from './client/keel-client';
export type { DecideOptions, ResultOptions, StartRunOptions, SteerOptions, TypedRunResult } from './client/keel-client';
export type { InFlight } from './client/run-events';
export type { SteerInput, SteerRecord } from './core/steering';
export type { ToolAttempt } from './client/tool-attempts';
export type { TaskView } from './core/tasks';
export type { HoldView } from './client/holds';
export { SessionHandle } from './client/session-handle';
export type { SendOptions } from './client/session-handle';
export type { InvokeOutput, Snapshot, SessionState } from './core/session';

export { KeelError, UNCLASSIFIED } from './core/errors';
export type { KeelErrorDetails } from './core/errors';
export { STATUS_NAMES, statusFromHttp } from './core/status';
export type { StatusName } from './core/status';

export { messageText } from './core/messages';
export type { FinishReason, Message, ModelRequest, ModelResponse, Part, ToolDefinition } from './core/messages';
export type { Usage } from './core/usage';
export type { Interrupt, MiddlewareRef, MiddlewareRefInput, RunInput, RunLifecycle, RunResult, RunStatus } from './core/run';
export type { Decision, DecisionRecord } from './core/holds';
export { artifactText } from './core/artifacts';
export type { Artifact } from './core/artifacts';

export { ConfigError, defineConfig, loadConfig, parseConfig } from './config/load';
export type { KeelConfig, KeelConfigInput } from './config/schema';

export { errorReply, objectReply, scriptedModel, textReply, toolCallReply } from './models/scripted';
export type { ScriptedModel, ScriptedReply } from './models/scripted';
export { openAICompatibleModel } from './models/openai-compatible';
export type { OpenAICompatibleOptions } from './models/openai-compatible';
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
  retry,
  skills,
  softToolErrors,
  toolApproval,
} from './middleware';
export type {
  AgentsConfig,
  ArtifactsConfig,
  BudgetConfig,
  ContextCompressionConfig,
  FallbackConfig,
  FilesystemConfig,
  RetryConfig,
  SkillsConfig,
  SoftToolErrorsConfig,
  ToolApprovalConfig,
} from './middleware';

export { createKeelWorker } from './worker/create-worker';
export type { KeelWorker, KeelWorkerOptions } from './worker/create-worker';
export type { ToolCallStart } from './worker/tool-call-start';
export { loadRegistry } from './worker/load-registry';
export { connectClient, connectWorker } from './worker/connect';
