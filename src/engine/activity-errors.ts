/**
 * How the loop talks to its activities: Temporal activity options from the worker's config,
 * and what an activity failure means as a keel error. Runs in the workflow: no I/O.
 */
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure, isCancellation } from '@temporalio/workflow';
import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';
import { KeelError, NOT_REGISTERED_FAILURE, fromApplicationFailure, toKeelError } from '../core/errors';
import { RefusedBeforeSchema, type ActivitySpec, type RefusedBefore } from '../core/run';

/**
 * What to carry into a new call when `error` is a call whose attempts were all spent on
 * refusals by workers that lack its agent, model or tool, with its retry time not yet over (a
 * final refusal is not retryable and carries nothing).
 */
function refusedBefore(error: unknown): RefusedBefore | undefined {
  const cause = activityCause(error);
  if (!(cause instanceof ApplicationFailure)) return undefined;
  const { type, nonRetryable, details } = cause;
  if (type !== NOT_REGISTERED_FAILURE || nonRetryable) return undefined;
  const parsed = RefusedBeforeSchema.safeParse((details?.[1] as { notRegistered?: unknown } | undefined)?.notRegistered);
  return parsed.success ? { since: parsed.data.since, workers: parsed.data.workers, activityId: parsed.data.activityId } : undefined;
}

/**
 * What made an activity call fail: the cause an ActivityFailure wraps (a regular activity's
 * failure), or the failure itself (a local activity's arrives unwrapped: the ApplicationFailure
 * or TimeoutFailure as such).
 */
export function activityCause(error: unknown): unknown {
  return error instanceof ActivityFailure ? error.cause : error;
}

/**
 * Schedules an activity call, and again (with what the refusals so far recorded) while workers
 * of the queue that lack its agent, model or tool spend all its attempts refusing it: in a
 * rolling deploy, old workers may take every attempt of a call before a new one does. A call's
 * own failures still end after its configured attempts; the refusals end after
 * `worker.notRegisteredRetryFor`, counted from the first refusal.
 */
export async function untilRegistered<T>(schedule: (refused: RefusedBefore | undefined) => Promise<T>): Promise<T> {
  let refused: RefusedBefore | undefined;
  for (;;) {
    try {
      return await schedule(refused);
    } catch (error) {
      const carry = refusedBefore(error);
      if (!carry) throw error;
      refused = carry;
    }
  }
}

/**
 * Options of the agent lookup (`resolveAgent`, a regular activity). A worker that lacks the
 * agent refuses it retryably (a rolling deploy's other workers may have it) and says when to
 * stop (`worker.notRegisteredRetryFor`); these bounds only catch a lookup that keeps failing
 * for another reason.
 */
export const RESOLVE_AGENT_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '30 minutes',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '5 seconds',
    maximumAttempts: 200,
    nonRetryableErrorTypes: ['NOT_FOUND', 'INVALID_ARGUMENT', 'INTERNAL'],
  },
};

/** Temporal activity options from the worker's config (carried in the resolved agent). */
export function activityOptions(spec: ActivitySpec): ActivityOptions {
  return {
    startToCloseTimeout: spec.startToCloseTimeout,
    heartbeatTimeout: spec.heartbeatTimeout,
    retry: {
      initialInterval: spec.retry.initialInterval,
      backoffCoefficient: spec.retry.backoffCoefficient,
      maximumInterval: spec.retry.maximumInterval,
      maximumAttempts: spec.retry.maximumAttempts,
    },
  };
}

/**
 * Local activity options from the same spec (docs/local-calls.md): the same timeout and retry
 * policy; no heartbeat timeout (a local activity's liveness is its workflow task's, which the SDK
 * heartbeats while the call runs).
 */
export function localActivityOptions(spec: ActivitySpec): LocalActivityOptions {
  const { startToCloseTimeout, retry } = activityOptions(spec);
  return { startToCloseTimeout, retry };
}

/**
 * Turns what an activity (or anything awaited) threw into a KeelError, keeping the status
 * that crossed the boundary. Cancellation is rethrown untouched so the run ends cancelled.
 */
export function asKeelError(error: unknown, what: string): KeelError {
  if (isCancellation(error)) throw error;
  if (error instanceof ActivityFailure || error instanceof TimeoutFailure) {
    const cause = activityCause(error);
    if (cause instanceof TimeoutFailure) {
      return new KeelError('DEADLINE_EXCEEDED', `${what} timed out (${cause.timeoutType}) after all attempts`);
    }
    if (cause instanceof ApplicationFailure) return fromApplicationFailure(cause);
    if (cause instanceof CancelledFailure) throw error;
    return KeelError.unclassified(`${what} failed: ${(cause as Error | undefined)?.message ?? error.message}`);
  }
  return toKeelError(error);
}
