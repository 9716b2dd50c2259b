/**
 * keel-agents: a durable agent runtime on Temporal. What an application writes against: agents,
 * tools and models; config; the client, its handles and results; the worker; the HTTP model
 * providers; the messages and usage a run carries; errors. Each name has one entry point: the
 * built-in middleware and a middleware author's contract are `keel-agents/middleware`, the
 * workflow entry `keel-agents/workflow`, the wire contract for other clients
 * `keel-agents/protocol`, and test and dev helpers (scripted models among them)
 * `keel-agents/testing`. Node side.
 */
export { defineAgent, defineModel, defineTool } from './define';
export type { Agent, AgentOptions, Approvers, Model, ModelContext, Tool, ToolContext, ToolOptions } from './define';
export { Registry } from './registry';

export { ConfigError, defineConfig, loadConfig } from './config/load';
export type { KeelConfig, KeelConfigInput } from './config/schema';

export { KeelClient, RunHandle, runErrorOf } from './client/keel-client';
export type { ForkOptions, ForkStarted } from './client/fork';
export type { StartRunOptions, TypedRunResult } from './client/keel-client';
export type { InFlight } from './client/run-events';
export type { Principal } from './core/principal';
export type { ToolAttempt } from './client/tool-attempts';
export type { TaskView } from './core/tasks';
export type { HoldView } from './client/holds';
export { SessionHandle } from './client/session-handle';
export type { SendOptions } from './client/session-handle';
export type { InvokeOutput, Snapshot } from './core/session';
export type { Hold, RunResult, RunStatus } from './core/run';
export type { Decision } from './core/holds';
export { verifyNoticeSignature } from './features/activities';
export type { HoldNotice, HoldNoticeType } from './core/hold-notices';

export { KeelError } from './core/errors';
export type { KeelErrorDetails } from './core/errors';
export { statusFromHttp } from './core/status';
export type { StatusName } from './core/status';

export { messageText } from './core/messages';
export type { Message, ModelRequest, ModelResponse, Part, ToolDefinition } from './core/messages';
export type { Usage } from './core/usage';
export { artifactText } from './core/artifacts';
export type { Artifact } from './core/artifacts';

export { openAICompatibleModel } from './models/openai-compatible';
export type { OpenAICompatibleOptions } from './models/openai-compatible';
export { aiSdkModel } from './models/ai-sdk';
export type { AiSdkLanguageModel, AiSdkModelOptions } from './models/ai-sdk';
export { anthropicModel } from './models/anthropic';
export type { AnthropicOptions } from './models/anthropic';

export { createKeelWorker } from './worker/create-worker';
export type { KeelWorker, KeelWorkerOptions } from './worker/create-worker';
export { loadRegistry } from './worker/load-registry';
export { connectClient, connectWorker } from './worker/connect';
