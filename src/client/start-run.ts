/**
 * Starts a generate run's workflow the way every keel client does: the memo `describe`, `list`
 * and the Web UI show (its agent, how its prompt starts, how it moves between builds), the root
 * span of its trace, and a failure to start said as a KeelError. Node side.
 */
import { ServiceError, WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { KeelError } from '../core/errors';
import { GENERATE_WORKFLOW } from '../core/protocol';
import type { RunInputOptions } from '../core/run';
import { versioningMemo, type RunVersioning } from '../core/versioning';
import { inSpan } from '../telemetry/spans';
import type { Message } from '../core/messages';

/** What `startGenerate` starts. */
export interface StartGenerateOptions {
  runId: string;
  agent: string;
  taskQueue: string;
  /** The run's input and, for a run given its conversation in chunks (a fork), the chunks. */
  args: [RunInputOptions, ...Message[][]];
  /** How the prompt starts, for the memo and the summary. */
  excerpt: string;
  versioning?: RunVersioning;
  /** More memo entries (a fork's origin). */
  memo?: Record<string, unknown>;
}

/** Starts the run; an open run with the id is ALREADY_EXISTS, any other refusal UNAVAILABLE (or its own status) with the server's reason. */
export async function startGenerate(temporal: Client, { runId, agent, taskQueue, args, excerpt, versioning, memo = {} }: StartGenerateOptions): Promise<void> {
  try {
    // The root of the run's trace when tracing is on: Temporal's spans for the start, the workflow and its activities go under it.
    await inSpan(`keel.run ${agent}`, { 'keel.run_id': runId, 'keel.agent': agent }, () =>
      temporal.workflow.start(GENERATE_WORKFLOW, {
        taskQueue,
        workflowId: runId,
        args,
        // keelVersioning: how the run moves between builds, when its agent has a choice in `deployment.agents`.
        memo: { agent, prompt: excerpt, ...versioningMemo(versioning), ...memo },
        staticSummary: `${agent}: ${excerpt}`,
      }),
    );
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError)
      throw new KeelError('ALREADY_EXISTS', `a run with id "${runId}" is already open; choose another id`);
    // The gRPC failure's cause says what to do (an unknown namespace, a refused input).
    const cause = error instanceof ServiceError && error.cause ? `: ${error.cause.message}` : '';
    throw new KeelError(
      KeelError.isInstance(error) ? error.status : 'UNAVAILABLE',
      `could not start run "${runId}" of agent "${agent}": ${(error as Error).message}${cause}`,
    );
  }
}
