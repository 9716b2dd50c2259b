/**
 * Runs activity work with a background heartbeat, so that a worker that dies is noticed
 * within the heartbeat timeout and the call is retried elsewhere, even when the tool or
 * model code never heartbeats itself. Node side.
 */
import { Context } from '@temporalio/activity';

/**
 * Calls `work` while heartbeating every second (at most a third of the heartbeat timeout).
 * The SDK throttles what reaches the server; frequent local beats keep the throttle the only
 * delay before a cancellation reaches the tool.
 */
export async function withHeartbeat<T>(work: (heartbeat: (details?: unknown) => void) => Promise<T>): Promise<T> {
  const context = Context.current();
  // A local activity has no heartbeat: its liveness is its workflow task's (docs/local-calls.md).
  if (context.info.isLocal) return work(() => undefined);
  let lastDetails: unknown;
  const heartbeat = (details?: unknown): void => {
    if (details !== undefined) lastDetails = details;
    context.heartbeat(lastDetails);
  };
  const timeoutMs = context.info.heartbeatTimeoutMs;
  const interval = timeoutMs ? setInterval(() => heartbeat(), Math.max(200, Math.min(1000, Math.floor(timeoutMs / 3)))) : undefined;
  try {
    heartbeat();
    return await work(heartbeat);
  } finally {
    if (interval) clearInterval(interval);
  }
}
