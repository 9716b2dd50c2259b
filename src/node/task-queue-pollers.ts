/**
 * Which workers poll a task queue for activities now: what tells a call refused by every worker
 * that took it (it names something none of them has) from one that a worker not asked yet may
 * run. The server lists a poller for a while after its worker is gone, so a poller counts only
 * when seen within the last 90 s (an idle worker's long poll is renewed within a minute), and a
 * `<pid>@<host>` poller of this host whose process no longer exists (a worker `keel dev`
 * restarted, one stopped a moment ago) does not count. Node side.
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

/** The identities of the workers polling `taskQueue` for activities now. */
export async function activityPollers(client: Client, taskQueue: string): Promise<string[]> {
  const { pollers } = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
  });
  const now = Date.now();
  return (pollers ?? [])
    .filter((poller) => poller.lastAccessTime?.seconds == null || now - Number(poller.lastAccessTime.seconds) * 1000 <= POLLER_FRESH_MS)
    .map((poller) => poller.identity ?? '')
    .filter(mayBeAlive);
}
