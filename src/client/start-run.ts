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
import { TypedSearchAttributes, type Priority } from '@temporalio/common';
import { principalOfMemo } from '../core/principal';
import { KEEL_AGENT, KEEL_OWNER, KEEL_TENANT } from '../core/search-attributes';
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
  /** Its Temporal priority (src/core/fairness.ts), handed down to all it starts. */
  priority?: Priority;
}

/** Clients whose namespace refused keel's principal attributes at a start. */
const unindexed = new WeakSet<Client>();

/**
 * KeelAgent, KeelTenant and KeelOwner at start, for a run that belongs to someone, so that a
 * scoped listing finds it before its first workflow task (its workflow upserts them too); none
 * when it belongs to no one or the client's namespace lacks them (docs/tenants.md).
 */
function startAttributes(temporal: Client, agent: string, memo: Record<string, unknown>): TypedSearchAttributes | undefined {
  const { tenant, owner } = principalOfMemo(memo);
  if ((tenant === undefined && owner === undefined) || unindexed.has(temporal)) return undefined;
  return new TypedSearchAttributes([
    { key: KEEL_AGENT, value: agent },
    ...(tenant !== undefined ? [{ key: KEEL_TENANT, value: tenant }] : []),
    ...(owner !== undefined ? [{ key: KEEL_OWNER, value: owner }] : []),
  ]);
}

/** Starts the run; an open run with the id is ALREADY_EXISTS, any other refusal UNAVAILABLE (or its own status) with the server's reason. */
export async function startGenerate(
  temporal: Client,
  { runId, agent, taskQueue, args, excerpt, versioning, memo = {}, priority }: StartGenerateOptions,
): Promise<void> {
  try {
    // The root of the run's trace when tracing is on: Temporal's spans for the start, the workflow and its activities go under it.
    const attributes = startAttributes(temporal, agent, memo);
    const start = (indexed: boolean) =>
      temporal.workflow.start(GENERATE_WORKFLOW, {
        taskQueue,
        workflowId: runId,
        args,
        // keelVersioning: how the run moves between builds, when its agent has a choice in `deployment.agents`.
        memo: { agent, prompt: excerpt, ...versioningMemo(versioning), ...memo },
        staticSummary: `${agent}: ${excerpt}`,
        ...(priority ? { priority } : {}),
        ...(indexed && attributes ? { typedSearchAttributes: attributes } : {}),
      });
    await inSpan(`keel.run ${agent}`, { 'keel.run_id': runId, 'keel.agent': agent }, async () => {
      if (!attributes) return start(false);
      try {
        return await start(true);
      } catch (error) {
        // A namespace without KeelTenant and KeelOwner: the run is listed by its memo alone (this client stops asking).
        if (!/KeelTenant|KeelOwner|search attribute/i.test(`${(error as Error).message} ${(error as { cause?: Error }).cause?.message ?? ''}`)) throw error;
        unindexed.add(temporal);
        return start(false);
      }
    });
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
