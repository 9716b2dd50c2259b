/**
 * The one retry rule for every update keel's clients send (decisions, steers, session messages):
 * the server refuses an update it could take a moment later — its limit of updates in flight per
 * run is reached (RESOURCE_EXHAUSTED), or the update was aborted because the run's workflow task
 * was lost or the run continued as new before taking it (UNAVAILABLE, "workflow update was
 * aborted"). The update is sent again with the same update id (which the server uses to take
 * it at most once) after a jittered, growing pause, until it is answered or its time is over;
 * then the error names the server's cause instead of the SDK's bare "Workflow Update failed".
 * Node side.
 */
import { isGrpcServiceError } from '@temporalio/client';
import { KeelError } from '../core/errors';

/** How long an update is retried by default, when its caller gives no deadline. */
export const UPDATE_RETRY_FOR_MS = 120_000;
const FIRST_PAUSE_MS = 50;
const MAX_PAUSE_MS = 2_000;
/** gRPC status codes (grpc/status.proto). */
const RESOURCE_EXHAUSTED = 8;
const UNAVAILABLE = 14;

/** The server's refusal of an update that a later attempt may pass, with its cause as text; undefined for any other error. */
export function transientUpdateRefusal(error: unknown): string | undefined {
  for (let cause: unknown = error, depth = 0; cause && depth < 4; cause = (cause as { cause?: unknown }).cause, depth++) {
    if (!isGrpcServiceError(cause)) continue;
    const code: number = cause.code;
    if (code === RESOURCE_EXHAUSTED) return `RESOURCE_EXHAUSTED: ${cause.details}`;
    if (code === UNAVAILABLE && /update was aborted/i.test(cause.details)) return `UNAVAILABLE: ${cause.details}`;
  }
  return undefined;
}

/** Options of `retryingUpdate`. */
export interface RetryingUpdateOptions {
  /** What is sent, for the error when giving up (e.g. `the decision on i1`). */
  what: string;
  /** When to stop retrying (epoch ms); default `UPDATE_RETRY_FOR_MS` from now. */
  deadline?: number;
}

/**
 * Runs `send` (which must send the same update id every time) until it is answered, retrying the
 * server's transient refusals; any other error is thrown as it came.
 */
export async function retryingUpdate<T>(send: () => Promise<T>, { what, deadline }: RetryingUpdateOptions): Promise<T> {
  const until = deadline ?? Date.now() + UPDATE_RETRY_FOR_MS;
  const started = Date.now();
  let pause = FIRST_PAUSE_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (error) {
      const refusal = transientUpdateRefusal(error);
      if (!refusal) throw error;
      const wait = Math.random() * pause;
      if (Date.now() + wait >= until) {
        throw new KeelError(
          'UNAVAILABLE',
          `${what} was not taken: the server refused it ${attempt} times in ${((Date.now() - started) / 1000).toFixed(1)} s (${refusal}); sending it again with the same update id is safe`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
      pause = Math.min(MAX_PAUSE_MS, pause * 2);
    }
  }
}
