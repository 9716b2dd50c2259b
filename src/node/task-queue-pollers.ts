/**
 * Which workers poll a task queue now: for workflow tasks, whether a run will move at all; for
 * activities, what tells a call refused by every worker that took it (it names something none of
 * them has) from one that a worker not asked yet may run. The server lists a poller for a while
 * after its worker is gone, so a poller counts only when seen within the last 90 s (an idle
 * worker's long poll is renewed within a minute), and a `<pid>@<host>` poller of this host whose
 * process no longer exists (a worker `keel dev` restarted, one stopped a moment ago) does not
 * count. Node side.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { hostname } from 'node:os';

/** How recently a poller must have been seen to count. */
const POLLER_FRESH_MS = 90_000;

/** False for `<pid>@<this host>` when no process `pid` runs here; true otherwise (another host's, or not that shape). */
function mayBeAlive(identity: string): boolean {
  const match = /^(\d+)@(.+)$/.exec(identity);
  if (!match || match[2] !== hostname()) return true;
  try {
    process.kill(Number(match[1]), 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** The identities of the workers polling `taskQueue` for `type` tasks now. */
export async function taskQueuePollers(client: Client, taskQueue: string, type: 'workflow' | 'activity'): Promise<string[]> {
  const { TaskQueueKind, TaskQueueType } = temporal.api.enums.v1;
  const { pollers } = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: type === 'workflow' ? TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW : TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
  });
  const now = Date.now();
  return (pollers ?? [])
    .filter((poller) => poller.lastAccessTime?.seconds == null || now - Number(poller.lastAccessTime.seconds) * 1000 <= POLLER_FRESH_MS)
    .map((poller) => poller.identity ?? '')
    .filter(mayBeAlive);
}

/** The identities of the workers polling `taskQueue` for activities now. */
export function activityPollers(client: Client, taskQueue: string): Promise<string[]> {
  return taskQueuePollers(client, taskQueue, 'activity');
}
