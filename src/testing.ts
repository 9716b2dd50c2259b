/**
 * keel-agents/testing: what a project's own tests and offline demos need besides the public API:
 * scripted models (`scriptedModel`, a model that answers from a script: no key, no network) and
 * the reply builders a script takes; an in-memory harness that runs a middleware's hooks with
 * fake capabilities (`testMiddleware`, no server, milliseconds a test); an embedded
 * Temporal dev server on a port of their choosing (the `temporal` binary keel finds or builds),
 * and a wait until a server answers; `createTestEnv` (a server, a worker from the project's own
 * modules, assertions on a run's tool calls and holds, decisions) and `replayHistories` (recorded
 * runs against the current workflow code).
 */
export { createTestEnv, recordedToolCalls } from './testing/test-env';
export type { ExpectedToolCall, HoldMatcher, RecordedToolCall, TestEnv, TestEnvOptions } from './testing/test-env';
export { HistoryReplayError, replayHistories, runIdOfHistoryFile } from './testing/replay';
export type { HistoryFile, ReplayFailure, ReplayHistoriesOptions } from './testing/replay';
export { historyFileName } from './ops/history-export';
export { errorReply, objectReply, scriptedModel, textReply, toolCallReply } from './models/scripted';
export type { ReplyFunction, Script, ScriptedModel, ScriptedModelOptions, ScriptedReply } from './models/scripted';
export { testMiddleware } from './testing/middleware-harness';
export type {
  FakeTool,
  HarnessToolCall,
  HeldCall,
  MiddlewareHarness,
  MiddlewareHarnessOptions,
  ResumedHold,
  ToolCallOutcome,
  ToolRun,
} from './testing/middleware-harness';
export type { FakeCapabilityOptions, RecordedModelCall } from './testing/fake-context';
export type { DecisionBody } from './core/holds';
export { findTemporalBinary, startDevServer, waitForServer } from './server/dev-server';
export type { DevServer, DevServerOptions } from './server/dev-server';
