/**
 * The activity interface the workflow proxies. Type-only for workflow code
 * (`proxyActivities<KeelActivities>` keeps the boundary typed without importing I/O).
 */
import type { DeliverNoticeInput } from '../core/hold-notices';
import type { ModelResponse } from '../core/messages';
import type { AgentSpec, CallModelInput, CallToolInput, ResolveAgentInput, ToolCallResult, ValidateToolOutputInput } from '../core/run';
import type { SignProofsInput, VerifyProofsInput } from '../core/proofs';

/** The core activities a keel worker registers (each feature's own come beside them, under their doors' names: src/features/activities.ts). */
export interface KeelActivities {
  /** Local activity: the agent's spec as registered on this worker. */
  resolveAgent(input: ResolveAgentInput): Promise<AgentSpec>;
  /** Posts one hold notice to one webhook of `notify:` (docs/notify.md); throws, to be retried, when the webhook does not take it. */
  deliverHoldNotice(input: DeliverNoticeInput): Promise<void>;
  /** One model call; reads the request back from the run by key. */
  callModel(input: CallModelInput): Promise<ModelResponse>;
  /** One tool call; validates input and output against the tool's schemas; answers the output and what the tool reported it spent. */
  callTool(input: CallToolInput): Promise<ToolCallResult>;
  /** Local activity: checks a stand-in output against the tool's output schema; returns it parsed. */
  validateToolOutput(input: ValidateToolOutputInput): Promise<unknown>;
  /** Signs what a client must not forge (a held call, a task id) with the workers' key (src/core/proofs.ts). */
  signProofs(input: SignProofsInput): Promise<string[]>;
  /** Checks proofs that came back with a conversation: one answer per claim. */
  verifyProofs(input: VerifyProofsInput): Promise<boolean[]>;
}
