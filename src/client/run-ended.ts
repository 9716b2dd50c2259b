/**
 * How a run's handle tells what it reached: the run's end (from outside the run, or as the reason
 * a message to it was refused), and Temporal out of reach while it waits for the result. Node side.
 */
import { Client, ServiceError, WorkflowFailedError, WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { KeelError } from '../core/errors';
import type { RunResult, RunStatus } from '../core/run';
import { runErrorOf } from '../node/run-errors';

/** Options of `RunHandle.result()`. */
export interface ResultOptions {
  /** How long to keep waiting while Temporal cannot be reached (default 10 minutes). */
  reconnectForMs?: number;
  /** Called once when Temporal could not be reached and the wait goes on, with what went wrong. */
  onReconnecting?: (reason: string) => void;
  /** Stops waiting (the run goes on): the wait then rejects with a CANCELLED KeelError. */
  signal?: AbortSignal;
}

/** How long `RunHandle.result()` waits through Temporal being out of reach, by default. */
const RECONNECT_FOR_MS = 10 * 60_000;
/** Pause between tries to reach Temporal again. */
const RECONNECT_PAUSE_MS = 1000;

/** gRPC status codes of a connection that failed (CANCELLED, UNKNOWN, DEADLINE_EXCEEDED, INTERNAL, UNAVAILABLE). */
const TRANSIENT_GRPC_CODES = new Set([1, 2, 4, 13, 14]);

/**
 * True for a failure to reach Temporal (a restart, a dropped connection), as opposed to the
 * run's own outcome (failed, cancelled, not found).
 */
function isTransient(error: unknown): boolean {
  if (error instanceof WorkflowFailedError || error instanceof WorkflowNotFoundError || KeelError.isInstance(error)) return false;
  if (error instanceof ServiceError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' && TRANSIENT_GRPC_CODES.has(code);
}

/** True for a gRPC call that ran past its deadline. */
function isDeadlineExceeded(error: unknown, deadline?: number): boolean {
  const grpc = error instanceof ServiceError ? error.cause : error;
  const code = (grpc as { code?: unknown } | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === 4 || /deadline exceeded/i.test(message)) return true;
  // A deadline that has passed can also end the call as a cancelled stream (RST_STREAM CANCEL), by a hair's race.
  return deadline !== undefined && Date.now() >= deadline && (code === 1 || /RST_STREAM|cancel/i.test(message));
}

/**
 * Waits for run `runId` to end; a failed or cancelled run throws a KeelError with its status.
 * Temporal out of reach meanwhile is not the run's outcome: the wait goes on for up to
 * `reconnectForMs` of it, then throws UNAVAILABLE saying the run may still be going.
 */
export async function awaitResult(
  client: Client,
  runId: string,
  { reconnectForMs = RECONNECT_FOR_MS, onReconnecting, signal }: ResultOptions,
): Promise<RunResult> {
  let lostSince: number | undefined;
  const stopped = () => new KeelError('CANCELLED', `stopped waiting for run ${runId}; the run goes on`);
  const wait = () => client.workflow.getHandle(runId).result() as Promise<RunResult>;
  for (;;) {
    if (signal?.aborted) throw stopped();
    try {
      return await (signal ? client.withAbortSignal(signal, wait) : wait());
    } catch (error) {
      if (signal?.aborted) throw stopped();
      if (!isTransient(error)) throw runErrorOf(error);
      const reason = error instanceof Error ? error.message : String(error);
      if (lostSince === undefined) {
        lostSince = Date.now();
        onReconnecting?.(reason);
      }
      if (Date.now() - lostSince >= reconnectForMs) {
        throw new KeelError(
          'UNAVAILABLE',
          `lost Temporal for ${Math.round(reconnectForMs / 1000)} s while waiting for run ${runId} (${reason}); the run itself may still be going: see keel status ${runId}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_PAUSE_MS));
    }
  }
}

/** How Temporal says the run ended, when it was from outside the run (terminated, timed out). */
export async function endedFromOutside(workflow: WorkflowHandle): Promise<Pick<RunStatus, 'state' | 'error'> | undefined> {
  const description = await workflow.describe();
  const name = description.status.name;
  if (name !== 'TERMINATED' && name !== 'TIMED_OUT') return undefined;
  if (name === 'TIMED_OUT') return { state: 'timed_out', error: { status: 'DEADLINE_EXCEEDED', message: 'the run exceeded its Temporal execution timeout' } };
  const history = await workflow.fetchHistory();
  const terminated = history.events?.at(-1)?.workflowExecutionTerminatedEventAttributes;
  const reason = terminated?.reason ? `: ${terminated.reason}` : '';
  return {
    state: 'terminated',
    error: { status: 'ABORTED', message: `the run was terminated${terminated?.identity ? ` by ${terminated.identity}` : ''}${reason}` },
  };
}

/** What a decision's failure means: no worker answered in time, the run ended, or the run's refusal. */
export async function decisionError(
  client: Client,
  runId: string,
  error: unknown,
  { timeoutMs, interruptId, deadline }: { timeoutMs: number | undefined; interruptId?: string; deadline: number | undefined },
): Promise<KeelError> {
  if (timeoutMs !== undefined && isDeadlineExceeded(error, deadline)) {
    return new KeelError(
      'DEADLINE_EXCEEDED',
      `no worker took the decision within ${Math.round(timeoutMs / 1000)} s (a worker polls the run's task queue but did not answer: busy, hung or stopped). The server keeps the decision for the run, until it restarts, and a worker applies it when it next runs the run (or refuses it, if the hold was decided meanwhile): see where it stands with keel status ${runId}`,
    );
  }
  return closedRunError(client, runId, error, interruptId !== undefined ? { interruptId } : {});
}

/**
 * Temporal answers a message to a run that has ended as if the run did not exist; say that
 * it ended, and how, when it did.
 */
export async function closedRunError(
  client: Client,
  runId: string,
  error: unknown,
  { interruptId, takes = 'decisions' }: { interruptId?: string; takes?: string },
): Promise<KeelError> {
  const failure = runErrorOf(error);
  if (!(error instanceof WorkflowNotFoundError)) return failure;
  const closed = await client.workflow
    .getHandle(runId)
    .describe()
    .then(
      (description) => (description.status.name === 'RUNNING' ? undefined : description.status.name.toLowerCase()),
      () => undefined,
    );
  if (!closed) return failure;
  return new KeelError(
    'FAILED_PRECONDITION',
    `run "${runId}" has ended (${closed}); it takes no more ${takes}${await stillHeldBelow(client, runId, interruptId)}`,
  );
}

/**
 * For a sub-agent's hold (`<key>/<id>`) sent to a run that has ended: where the hold still
 * waits, when that sub-agent's run (`<runId>/<key>`, a background task) goes on.
 */
async function stillHeldBelow(client: Client, runId: string, interruptId: string | undefined): Promise<string> {
  const separator = interruptId?.indexOf('/') ?? -1;
  if (!interruptId || separator <= 0) return '';
  const childRunId = `${runId}/${interruptId.slice(0, separator)}`;
  const running = await client.workflow
    .getHandle(childRunId)
    .describe()
    .then(
      (description) => description.status.name === 'RUNNING',
      () => false,
    );
  const rest = interruptId.slice(separator + 1);
  return running
    ? `; hold ${interruptId} is in run "${childRunId}", which goes on: decide it there (npx keel approve ${childRunId} ${rest}), or list every pending hold with keel holds`
    : '';
}
