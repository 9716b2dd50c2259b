/**
 * How the loop talks to its activities: Temporal activity options from the worker's config,
 * and what an activity failure means as a keel error. Runs in the workflow: no I/O.
 */
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure, isCancellation } from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import { KeelError, fromApplicationFailure, toKeelError } from '../core/errors';
import type { ActivitySpec } from '../core/run';

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
 * Turns what an activity (or anything awaited) threw into a KeelError, keeping the status
 * that crossed the boundary. Cancellation is rethrown untouched so the run ends cancelled.
 */
export function asKeelError(error: unknown, what: string): KeelError {
  if (isCancellation(error)) throw error;
  if (error instanceof ActivityFailure) {
    const cause = error.cause;
    if (cause instanceof TimeoutFailure) {
      return new KeelError('DEADLINE_EXCEEDED', `${what} timed out (${cause.timeoutType}) after all attempts`);
    }
    if (cause instanceof ApplicationFailure) return fromApplicationFailure(cause);
    if (cause instanceof CancelledFailure) throw error;
    return KeelError.unclassified(`${what} failed: ${cause?.message ?? error.message}`);
  }
  return toKeelError(error);
}
