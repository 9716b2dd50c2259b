/**
 * "Not registered on this worker": the normal state of a rolling deploy that adds an agent,
 * model or tool (old and new workers poll one task queue), or of a worker started from the
 * wrong directory. Another worker of the queue may have what this one lacks, so the refusal is
 * retryable: Temporal gives the next attempt to any worker. Each worker that refuses logs it and
 * adds itself (with what it has) to the attempt's heartbeat details, which the next attempt
 * reads; once `worker.notRegisteredRetryFor` has passed since the call was first scheduled, the
 * refusal is final: NOT_FOUND, naming what was missing and every worker that was asked. When
 * refusals spend all of a call's attempts before that, the run schedules the call again with
 * `refusedBefore` (see `untilRegistered`), so the clock and the list carry on.
 * Node side.
 */
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure, type Duration } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import { hostname } from 'node:os';
import { KeelError, NOT_REGISTERED_FAILURE, type KeelErrorDetails } from '../core/errors';
import type { RefusedBefore } from '../core/run';

const MARK = '__keelNotRegistered';

/** Thrown by an activity that lacks the agent, model or tool a call names. */
export class NotRegisteredError extends KeelError {
  readonly [MARK] = true;

  constructor(
    message: string,
    /** What is missing: its kind and name, and what this worker has of that kind instead. */
    readonly missing: { kind: 'agent' | 'model' | 'tool'; name: string; has: string[] },
    details: KeelErrorDetails = {},
  ) {
    super('NOT_FOUND', message, details);
    this.name = 'NotRegisteredError';
  }

  static override isInstance(error: unknown): error is NotRegisteredError {
    return KeelError.isInstance(error) && (error as unknown as Record<string, unknown>)[MARK] === true;
  }
}

/** A worker that refused a call, and what it has of the kind that was missing. */
export type RefusingWorker = RefusedBefore['workers'][number];

/**
 * What a refused attempt records, in its heartbeat details (for the next attempt) and as the
 * second detail of its failure (for clients: `keel run` says at once when no worker polling the
 * queue has the agent).
 */
export interface NotRegisteredReport {
  notRegistered: {
    kind: 'agent' | 'model' | 'tool';
    name: string;
    workers: RefusingWorker[];
    retryFor: string;
    /** When the call was first scheduled, and its activity id: what a call scheduled again carries on from. */
    since: number;
    activityId: string;
  };
}

/** The workers a previous attempt recorded as having refused. */
const asked = (details: unknown): RefusingWorker[] => {
  const list = (details as Partial<NotRegisteredReport> | undefined)?.notRegistered?.workers;
  return Array.isArray(list) ? list.filter((entry): entry is RefusingWorker => typeof entry?.identity === 'string' && Array.isArray(entry.has)) : [];
};

const describeWorker = (worker: RefusingWorker, kind: string) => `worker ${worker.identity} (${kind}s: ${worker.has.join(', ') || '(none)'})`;

/**
 * The failure a NotRegisteredError leaves its activity with: retryable while the call is younger
 * than `retryFor` (another worker may have it), else final (NOT_FOUND, naming every worker asked).
 */
export function notRegisteredFailure(error: NotRegisteredError, retryFor: Duration, refusedBefore?: RefusedBefore): ApplicationFailure | KeelError {
  const context = Context.current();
  const { info } = context;
  const { kind, name, has } = error.missing;
  const me: RefusingWorker = { identity: `${process.pid}@${hostname()}`, has };
  const before = [...(refusedBefore?.workers ?? []), ...asked(info.heartbeatDetails)];
  const workers = [...new Map(before.map((worker) => [worker.identity, worker])).values()].filter((worker) => worker.identity !== me.identity);
  workers.push(me);
  const listed = workers.map((worker) => describeWorker(worker, kind)).join('; ');
  const since = refusedBefore?.since ?? info.scheduledTimestampMs;
  const activityId = refusedBefore?.activityId ?? info.activityId;
  const report: NotRegisteredReport = { notRegistered: { kind, name, workers, retryFor: String(retryFor), since, activityId } };
  const waited = Date.now() - since;
  const bound = msToNumber(retryFor);
  log.warn(`refused a call: ${error.message}`, { attempt: info.attempt, activityType: info.activityType });
  if (waited < bound) {
    context.heartbeat(report);
    return ApplicationFailure.create({
      type: NOT_REGISTERED_FAILURE,
      nonRetryable: false,
      message: `${error.message}; another worker of task queue "${info.taskQueue}" may have it, so the call is retried (for up to ${String(retryFor)}); asked so far: ${listed}`,
      details: [error.details, report],
    });
  }
  return new KeelError(
    'NOT_FOUND',
    `${error.message}; no worker of task queue "${info.taskQueue}" that took the call within ${String(retryFor)} has it; asked: ${listed}`,
    error.details,
  );
}
