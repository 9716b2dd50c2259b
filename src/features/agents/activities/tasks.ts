/**
 * What a run learns of its background tasks (sub-agent runs), through a Temporal client:
 * `inspectTasks` reads each task's state once; `awaitTasks` waits, heartbeating, until the
 * tasks settle (or the first does, or a deadline passes). A worker that dies mid-wait is
 * noticed by the heartbeat timeout and the wait resumes on another worker, up to the same
 * deadline. Node side.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { isSettled, type AwaitTasksInput, type AwaitTasksResult, type InspectTasksInput, type TaskReport } from '../../../core/tasks';
import { inspectTask } from '../../../node/inspect-task';
import { InfrastructureError } from '../../../activities/infrastructure-error';
import { implementActivity } from '../../../activities/feature-activity';
import { awaitTasksDoor, inspectTasksDoor, invokeSessionDoor } from '../run-part';
import { invokeSession } from './invoke-session';

/** How often a wait looks at its tasks again. */
const POLL_MS = 500;

/** The `inspectTasks` activity. */
export async function inspectTasks(client: Client, { runIds }: InspectTasksInput): Promise<TaskReport[]> {
  return Promise.all(
    runIds.map((runId) =>
      inspectTask(client, runId).catch((error: unknown) => {
        // Temporal could not be asked: the activity's retry policy tries again.
        throw new InfrastructureError(`could not read task run "${runId}": ${(error as Error).message}`);
      }),
    ),
  );
}

/** The `awaitTasks` activity: waits, heartbeating, until the tasks settle, the first does, or the deadline. */
export async function awaitTasks(client: Client, { runIds, deadline, first = false }: AwaitTasksInput): Promise<AwaitTasksResult> {
  const context = Context.current();
  // A settled task does not change: read it once, then look only at the others.
  const known = new Map<string, TaskReport>();
  for (;;) {
    const fresh = await inspectTasks(client, { runIds: runIds.filter((runId) => !known.has(runId)) });
    for (const report of fresh) if (isSettled(report.status)) known.set(report.runId, report);
    const reports = runIds.map((runId) => known.get(runId) ?? fresh.find((report) => report.runId === runId)!);
    const settled = reports.filter((report) => isSettled(report.status));
    if (settled.length === reports.length || (first && settled.length > 0)) return { reports, timedOut: false };
    if (deadline !== undefined && Date.now() >= deadline) return { reports, timedOut: true };
    context.heartbeat();
    const pause = deadline === undefined ? POLL_MS : Math.max(0, Math.min(POLL_MS, deadline - Date.now()));
    await context.sleep(pause);
  }
}

/** The Node half of Agents: its background tasks' reads and its session runs. */
export const agentsActivities = [
  implementActivity(inspectTasksDoor, (input, { client }) => inspectTasks(client, input)),
  implementActivity(awaitTasksDoor, (input, { client }) => awaitTasks(client, input)),
  implementActivity(invokeSessionDoor, (input, { client }) => invokeSession(client, input)),
];
