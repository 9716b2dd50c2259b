/**
 * keel-agents/testing: what a project's own tests need besides the public API: an in-memory
 * harness that runs a middleware's hooks with fake capabilities (`testMiddleware`, no server,
 * milliseconds a test), the scripted reply builders its model script takes, an embedded
 * Temporal dev server on a port of their choosing (the `temporal` binary keel finds or builds),
 * and a wait until a server answers. Scripted models are a provider in `keel-agents`.
 */
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
export { errorReply, objectReply, textReply, toolCallReply } from './models/scripted';
export type { ReplyFunction, Script, ScriptedReply } from './models/scripted';
export type { DecisionBody } from './core/holds';
export { findTemporalBinary, startDevServer, waitForServer } from './server/dev-server';
export type { DevServer, DevServerOptions } from './server/dev-server';
