/**
 * One turn of a session: it runs as a child generate run in a scope an abort can cancel,
 * ends in one of four ways (a result, stopped by a limit with what it kept, aborted, failed),
 * and settles into the session's state and its snapshot. Runs in the workflow:
 * deterministic, no I/O.
 */
import { childSummary } from './child-summary';
import { ApplicationFailure, CancellationScope, isCancellation, startChild } from '@temporalio/workflow';
import { inheritedVersioning } from './versioning';
import { fromApplicationFailure, toKeelError, type KeelError } from '../core/errors';
import type { Artifact } from '../core/artifacts';
import { messageText, type Message } from '../core/messages';
import { addUsage, type Usage } from '../core/usage';
import type { MiddlewareRef, RunResult } from '../core/run';
import type { InvokeOutput, SessionState, Snapshot } from '../core/session';
import { GENERATE_WORKFLOW } from '../core/protocol';
import { findSnapshot, refusal, updateSnapshot, type Session } from './session-state';

/** What a stopped run kept (RunStoppedError's partial result). */
export type KeptPartial = { messages?: Message[]; usage?: Usage; artifacts?: Artifact[] };

/** How a turn's run ended: with a result, stopped (by a budget) with what it kept, aborted by the session, or failed. */
export type TurnEnd =
  { result: RunResult } | { stopped: { status: KeelError['status']; message: string; partial?: KeptPartial } } | { aborted: true } | { failed: KeelError };

/** What starting a turn needs. */
export interface StartTurnOptions {
  /** The turn's pending snapshot (its `runId` is the child's workflow id). */
  snapshot: Snapshot;
  /** The state the turn starts from. */
  base: SessionState;
  /** The history the run is sent: the base's and the invocation's new messages. */
  messages: Message[];
  /** Middleware the run gets besides the agent's own. */
  use: MiddlewareRef[];
  /** The run the turn's holds are reported to, and their key there. */
  reportTo?: { runId: string; key: string };
}

/** How a turn's run that threw ended: aborted on a cancellation, stopped when the failure carries a partial result, otherwise failed. */
export function turnEnding(error: unknown): TurnEnd {
  if (isCancellation(error)) return { aborted: true };
  const cause = (error as { cause?: unknown }).cause;
  const failure = cause instanceof ApplicationFailure ? fromApplicationFailure(cause) : toKeelError(error);
  const partial = failure.details.partial as KeptPartial | undefined;
  return partial ? { stopped: { status: failure.status, message: failure.message, partial } } : { failed: failure };
}

/**
 * Starts one turn as a child generate run, in a scope `abortCurrentTurn` can cancel, and makes
 * it the session's turn in flight until it ends; resolves once the run has started (so its id
 * can be followed), with how it will end.
 */
export async function startTurn(session: Session, { snapshot, base, messages, use, reportTo }: StartTurnOptions): Promise<{ ended: Promise<TurnEnd> }> {
  const runId = snapshot.runId;
  const scope = new CancellationScope();
  session.current = { snapshot, scope, ...(reportTo ? { requestedBy: reportTo.runId } : {}) };
  const finish = (end: TurnEnd): TurnEnd => {
    session.current = undefined;
    return end;
  };
  const input = {
    agent: session.agent,
    messages,
    artifacts: base.artifacts,
    session: { id: session.sessionId, usage: base.usage },
    use,
    ...(reportTo ? { reportTo } : {}),
  };
  let child;
  try {
    child = await scope.run(() =>
      startChild(GENERATE_WORKFLOW, { workflowId: runId, args: [input], ...childSummary(session.agent, messages), ...inheritedVersioning() }),
    );
  } catch (error) {
    return { ended: Promise.resolve(finish(turnEnding(error))) };
  }
  const started = child;
  const ended = scope
    .run(() => started.result())
    .then(
      (result) => finish({ result: result as RunResult }),
      (error: unknown) => finish(turnEnding(error)),
    );
  return { ended };
}

/** Stops the turn in flight: its snapshot reads `aborting` until it settles as `aborted`. Returns that snapshot, or null when no turn runs. */
export function abortCurrentTurn(session: Session): Snapshot | null {
  const current = session.current;
  if (!current) return null;
  current.snapshot = { ...current.snapshot, status: 'aborting', updatedAt: new Date().toISOString() };
  if (findSnapshot(session, current.snapshot.snapshotId)) updateSnapshot(session, current.snapshot.snapshotId, { status: 'aborting' });
  current.scope.cancel();
  return current.snapshot;
}

/** The history a session keeps of a run's messages: all but the system prompt. */
function history(messages: Message[]): Message[] {
  return messages.filter((message) => message.role !== 'system');
}

/** What a turn that did not fail leaves: the session's next state, and the status and finish reason its snapshot settles with. */
interface TurnOutcome {
  next: SessionState;
  status: Snapshot['status'];
  finishReason: string;
  message?: Message;
}

/**
 * The outcome of a turn that did not fail. A result completes it with the run's history and
 * artifacts; a stopped run aborts it with what the run kept (or the base's); an aborted run
 * leaves the base. Usage adds to what the session had spent, whatever the base.
 */
function turnOutcome(session: Session, base: SessionState, end: Exclude<TurnEnd, { failed: KeelError }>): TurnOutcome {
  const spent = session.state.usage;
  if ('result' in end) {
    const { result } = end;
    return {
      next: { ...base, messages: history(result.messages), artifacts: result.artifacts, usage: addUsage(spent, result.usage, 'the usage of the turn') },
      status: 'completed',
      finishReason: result.finishReason,
      message: result.message,
    };
  }
  if ('stopped' in end) {
    const partial = end.stopped.partial;
    const next = {
      ...base,
      messages: history(partial?.messages ?? base.messages),
      artifacts: partial?.artifacts ?? base.artifacts,
      usage: addUsage(spent, partial?.usage ?? {}, 'the usage of the turn'),
    };
    return { next, status: 'aborted', finishReason: 'aborted' };
  }
  return { next: { ...base, usage: spent }, status: 'aborted', finishReason: 'aborted' };
}

/** The answer to a turn's invocation: its snapshot's ids and status, the state it left, and what it spent. */
function turnAnswer(
  session: Session,
  { snapshot, end, status, finishReason, next }: { snapshot: Snapshot; end: TurnEnd; status: Snapshot['status']; finishReason: string; next: SessionState },
  extra: Partial<InvokeOutput>,
): InvokeOutput {
  return {
    sessionId: session.sessionId,
    snapshotId: snapshot.snapshotId,
    runId: snapshot.runId,
    status,
    finishReason,
    text: '',
    artifacts: next.artifacts,
    usage: 'result' in end ? end.result.usage : 'stopped' in end ? (end.stopped.partial?.usage ?? {}) : {},
    sessionUsage: next.usage,
    ...extra,
  };
}

/**
 * Records how a turn ended and answers its invocation. A failed turn that was waited for
 * rejects the invocation and records nothing; a failed detached one marks its snapshot
 * failed and leaves the state. Any other end becomes the session's state and its snapshot
 * settles (recorded now if the turn was not detached).
 */
export function settleTurn(
  session: Session,
  { snapshot, base, end, detached }: { snapshot: Snapshot; base: SessionState; end: TurnEnd; detached: boolean },
): InvokeOutput {
  if ('failed' in end) {
    if (!detached) throw refusal(end.failed.status, end.failed.message);
    updateSnapshot(session, snapshot.snapshotId, { status: 'failed', finishReason: 'failed', error: end.failed.toJSON(), messageCount: base.messages.length });
    return turnAnswer(session, { snapshot, end, status: 'failed', finishReason: 'failed', next: base }, { error: end.failed.toJSON() });
  }
  const { next, status, finishReason, message } = turnOutcome(session, base, end);
  session.state = next;
  const stopped = 'stopped' in end ? { error: { status: end.stopped.status, message: end.stopped.message } } : {};
  const recorded: Partial<Snapshot> = { status, finishReason, messageCount: next.messages.length, ...stopped };
  if (findSnapshot(session, snapshot.snapshotId)) updateSnapshot(session, snapshot.snapshotId, recorded);
  else session.snapshots = [...session.snapshots, { ...snapshot, ...recorded }];
  const output = 'result' in end && end.result.output !== undefined ? { output: end.result.output } : {};
  return turnAnswer(
    session,
    { snapshot, end, status, finishReason, next },
    { ...(message ? { message, text: messageText(message) } : {}), ...output, ...stopped },
  );
}
