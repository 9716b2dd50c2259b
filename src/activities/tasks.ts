/**
 * What a run learns of its background tasks (sub-agent runs), through a Temporal client:
 * `inspectTasks` reads each task's state once; `awaitTasks` waits, heartbeating, until the
 * tasks settle (or the first does, or a deadline passes). A worker that dies mid-wait is
 * noticed by the heartbeat timeout and the wait resumes on another worker, up to the same
 * deadline. Node side.
 */
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { RunResultSchema } from '../core/run';
import { isSettled, type AwaitTasksInput, type AwaitTasksResult, type InspectTasksInput, type TaskReport } from '../core/tasks';
import { runErrorOf } from '../client/run-errors';
import { statusQuery } from '../workflows/definitions';
import { InfrastructureError } from './infrastructure-error';

/** How often a wait looks at its tasks again. */
const POLL_MS = 500;

/** One task's state, read from Temporal. */
export async function inspectTask(client: Client, runId: string): Promise<TaskReport> {
  const handle = client.workflow.getHandle(runId);
  let description;
  try {
    description = await handle.describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { runId, status: 'unknown', error: { status: 'NOT_FOUND', message: `no run "${runId}" exists` } };
    // Temporal could not be asked: the activity's retry policy tries again.
    throw new InfrastructureError(`could not read task run "${runId}": ${(error as Error).message}`);
  }
  switch (description.status.name) {
    case 'RUNNING':
    case 'CONTINUED_AS_NEW':
      return { runId, status: 'pending' };
    case 'COMPLETED':
      return { runId, status: 'completed', result: RunResultSchema.parse(await handle.result()) };
    case 'CANCELLED':
      return { runId, status: 'aborted' };
    default: {
      const error = await handle.result().then(
        () => undefined,
        (failure: unknown) => runErrorOf(failure),
      );
      const status = await handle.query(statusQuery).catch(() => undefined);
      return { runId, status: 'failed', error: error ? { status: error.status, message: error.message } : (status?.error ?? { status: 'UNKNOWN', message: `the run ended ${description.status.name.toLowerCase()}` }) };
    }
  }
}

/** The `inspectTasks` activity. */
export async function inspectTasks(client: Client, { runIds }: InspectTasksInput): Promise<TaskReport[]> {
  return Promise.all(runIds.map((runId) => inspectTask(client, runId)));
}

/** The `awaitTasks` activity: waits, heartbeating, until the tasks settle, the first does, or the deadline. */
export async function awaitTasks(client: Client, { runIds, deadline, first = false }: AwaitTasksInput): Promise<AwaitTasksResult> {
  const context = Context.current();
  for (;;) {
    const reports = await inspectTasks(client, { runIds });
    const settled = reports.filter((report) => isSettled(report.status));
    if (settled.length === reports.length || (first && settled.length > 0)) return { reports, timedOut: false };
    if (deadline !== undefined && Date.now() >= deadline) return { reports, timedOut: true };
    context.heartbeat();
    const pause = deadline === undefined ? POLL_MS : Math.max(0, Math.min(POLL_MS, deadline - Date.now()));
    await context.sleep(pause);
  }
}
