/**
 * Where a background task's run stands, read from Temporal: still pending, or completed
 * with its result, failed with its error, aborted, or unknown. Used by the task activities
 * and by the client (`run.tasks()`, `keel tasks`). Node side.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { RunResultSchema } from '../core/run';
import type { TaskReport } from '../core/tasks';
import { statusQuery } from '../core/protocol';
import { runErrorOf } from './run-errors';

/** One task's state, read from Temporal (a failure to reach Temporal is thrown). */
export async function inspectTask(client: Client, runId: string): Promise<TaskReport> {
  const handle = client.workflow.getHandle(runId);
  let description;
  try {
    description = await handle.describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { runId, status: 'unknown', error: { status: 'NOT_FOUND', message: `no run "${runId}" exists` } };
    throw error;
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
      // A run stopped on purpose (a budget) kept its partial result: it was aborted, not failed.
      if (error) return { runId, status: error.details.partial ? 'aborted' : 'failed', error: { status: error.status, message: error.message } };
      const status = await handle.query(statusQuery).catch(() => undefined);
      return { runId, status: 'failed', error: status?.error ?? { status: 'UNKNOWN', message: `the run ended ${description.status.name.toLowerCase()}` } };
    }
  }
}
