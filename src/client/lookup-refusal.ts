/**
 * Tells, right after a run starts, when no worker polling its task queue has the run's agent
 * (or that agent's model or tool): the agent lookup of such a run is refused by every worker
 * that takes it, and retried for `worker.notRegisteredRetryFor` in case a worker that has it
 * starts (a rolling deploy). `keel run` uses this to say so at once instead of waiting. Read
 * from the run's pending `resolveAgent` activity (its last failure names the workers that
 * refused and what they have) and the task queue's pollers. Node side.
 */
import { decodePayload } from './decode-payload';
import type { Client } from '@temporalio/client';
import { NOT_REGISTERED_FAILURE } from '../core/errors';
import type { NotRegisteredReport } from '../activities/not-registered';
import { activityPollers } from '../node/task-queue-pollers';

/** What every polling worker lacks, and what they have instead. */
export interface LookupRefusal {
  kind: 'agent' | 'model' | 'tool';
  name: string;
  /** What the refusing workers have of that kind, together. */
  has: string[];
  workers: string[];
  retryFor: string;
}

/**
 * The run's lookup refusal when every worker now polling its task queue (for activities) has
 * refused it; `passed` once the lookup is behind the run; undefined while neither is known.
 */
export async function lookupRefusal(client: Client, runId: string): Promise<LookupRefusal | 'passed' | undefined> {
  const { raw } = await client.workflow.getHandle(runId).describe();
  const lookup = (raw.pendingActivities ?? []).find((activity) => activity.activityType?.name === 'resolveAgent');
  if (!lookup) return Number(raw.workflowExecutionInfo?.historyLength ?? 0) > 4 ? 'passed' : undefined;
  const failure = lookup.lastFailure;
  if (failure?.applicationFailureInfo?.type !== NOT_REGISTERED_FAILURE) return undefined;
  const payload = failure.applicationFailureInfo.details?.payloads?.[1];
  if (!payload) return undefined;
  const report = (await decodePayload<NotRegisteredReport>(client, payload))?.notRegistered;
  if (!report) return undefined;
  const polling = await activityPollers(client, raw.workflowExecutionInfo?.taskQueue ?? '');
  const refused = new Set(report.workers.map((worker) => worker.identity));
  if (polling.some((identity) => !refused.has(identity))) return undefined;
  return {
    kind: report.kind,
    name: report.name,
    has: [...new Set(report.workers.flatMap((worker) => worker.has))].sort(),
    workers: [...refused],
    retryFor: report.retryFor,
  };
}
