/**
 * "Not registered on this worker": the normal state of a rolling deploy that adds an agent,
 * model or tool (old and new workers poll one task queue), or of a worker started from the
 * wrong directory. Another worker of the queue may have what this one lacks, so the refusal is
 * retryable: Temporal gives the next attempt to any worker. Each worker that refuses logs it and
 * adds itself (with what it has) to the attempt's heartbeat details, which the next attempt
 * reads; once `worker.notRegisteredRetryFor` has passed since the call's first refusal and every
 * worker polling the queue has refused it, the refusal is final: NOT_FOUND, naming what was
 * missing and every worker that was asked. A polling worker that never gets the call keeps it
 * alive no longer than the call's own timeout. When refusals spend all of a call's attempts
 * before that, the run schedules the call again with `refusedBefore` (see `untilRegistered`), so
 * the clock and the list carry on.
 * Node side.
 */
import { Context, log } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure, ApplicationFailureCategory, type Duration } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import { hostname } from 'node:os';
import { KeelError, NOT_REGISTERED_FAILURE, type KeelErrorDetails } from '../core/errors';
import type { RefusedBefore } from '../core/run';
import { activityPollers } from '../node/task-queue-pollers';

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
    /** When the call was first refused, and its activity id: what a call scheduled again carries on from. */
    since: number;
    activityId: string;
  };
}

/** How long asking the server for the queue's pollers may take. */
const POLLERS_DEADLINE_MS = 5000;

/** What the previous attempt of this call recorded, if it was refused. */
const previous = (details: unknown): Partial<NotRegisteredReport['notRegistered']> =>
  ((details as Partial<NotRegisteredReport> | undefined)?.notRegistered as Partial<NotRegisteredReport['notRegistered']> | undefined) ?? {};

/** The workers a previous attempt recorded as having refused. */
const asked = (details: unknown): RefusingWorker[] => {
  const list = previous(details).workers;
  return Array.isArray(list) ? list.filter((entry): entry is RefusingWorker => typeof entry?.identity === 'string' && Array.isArray(entry.has)) : [];
};

const describeWorker = (worker: RefusingWorker, kind: string) => `worker ${worker.identity} (${kind}s: ${worker.has.join(', ') || '(none)'})`;

/**
 * The failure a NotRegisteredError leaves its activity with. Retryable (another worker of the
 * queue may have what this one lacks) while less than `retryFor` has passed since the call's
 * first refusal (time spent waiting in a busy queue before it does not count), and after that
 * while a worker polling the queue has not refused it yet; final (NOT_FOUND, naming every worker
 * asked) once every polling worker has refused it and `retryFor` is over. A retryable refusal is
 * benign for the SDK (logged at debug, no failure metrics); this worker logs one line the first
 * time it refuses a call.
 */
export async function notRegisteredFailure(
  error: NotRegisteredError,
  { retryFor, client, refusedBefore }: { retryFor: Duration; client: Client; refusedBefore?: RefusedBefore },
): Promise<ApplicationFailure | KeelError> {
  const context = Context.current();
  const { info } = context;
  const { kind, name, has } = error.missing;
  const me: RefusingWorker = { identity: `${process.pid}@${hostname()}`, has };
  const before = [...(refusedBefore?.workers ?? []), ...asked(info.heartbeatDetails)];
  const workers = [...new Map(before.map((worker) => [worker.identity, worker])).values()].filter((worker) => worker.identity !== me.identity);
  const refusedHereBefore = workers.length < before.length;
  workers.push(me);
  const listed = workers.map((worker) => describeWorker(worker, kind)).join('; ');
  const lastSince = previous(info.heartbeatDetails).since;
  const since = refusedBefore?.since ?? (typeof lastSince === 'number' ? lastSince : Date.now());
  const activityId = refusedBefore?.activityId ?? info.activityId;
  const report: NotRegisteredReport = { notRegistered: { kind, name, workers, retryFor: String(retryFor), since, activityId } };
  if (!refusedHereBefore) log.warn(`refused a call: ${error.message}`, { attempt: info.attempt, activityType: info.activityType });
  const retryable = (why: string) => {
    context.heartbeat(report);
    return ApplicationFailure.create({
      type: NOT_REGISTERED_FAILURE,
      nonRetryable: false,
      category: ApplicationFailureCategory.BENIGN,
      message: `${error.message}; ${why}; asked so far: ${listed}`,
      details: [error.details, report],
    });
  };
  if (Date.now() - since < msToNumber(retryFor))
    return retryable(`another worker of task queue "${info.taskQueue}" may have it, so the call is retried (for up to ${String(retryFor)})`);
  // A busy worker that has the call may not have been offered it yet: while one polls, the call
  // stays alive (bounded by its own timeout, which Temporal enforces).
  const refused = new Set(workers.map((worker) => worker.identity));
  const polling = await client.withDeadline(Date.now() + POLLERS_DEADLINE_MS, () => activityPollers(client, info.taskQueue)).catch(() => []);
  const untried = polling.filter((identity) => !refused.has(identity));
  if (untried.length) return retryable(`worker ${untried.join(', ')} polls task queue "${info.taskQueue}" and has not refused it, so the call is retried`);
  return new KeelError(
    'NOT_FOUND',
    `${error.message}; no worker of task queue "${info.taskQueue}" that took the call within ${String(retryFor)} has it; asked: ${listed}`,
    error.details,
  );
}
