/**
 * One run of a session: a child generate run that runs in a scope an abort can cancel,
 * ends in one of four ways (a result, stopped by a limit with what it kept, aborted, failed),
 * and settles into the session's state and its snapshot. Runs in the workflow:
 * deterministic, no I/O.
 */
import { childSummary } from '../engine/child-summary';
import { ApplicationFailure, CancellationScope, isCancellation, startChild } from '@temporalio/workflow';
import { inheritedMemo } from '../engine/versioning';
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

/** How a session run ended: with a result, stopped (by a budget) with what it kept, aborted by the session, or failed. */
export type SessionRunEnd =
  { result: RunResult } | { stopped: { status: KeelError['status']; message: string; partial?: KeptPartial } } | { aborted: true } | { failed: KeelError };

/** What starting a run needs. */
export interface StartSessionRunOptions {
  /** The run's pending snapshot (its `runId` is the child's workflow id). */
  snapshot: Snapshot;
  /** The state the run starts from. */
  base: SessionState;
  /** The history the run is sent: the base's and the invocation's new messages. */
  messages: Message[];
  /** Middleware the run gets besides the agent's own. */
  use: MiddlewareRef[];
  /** The run this run's holds are reported to, and their key there. */
  reportTo?: { runId: string; key: string };
}

/** How a session run that threw ended: aborted on a cancellation, stopped when the failure carries a partial result, otherwise failed. */
export function runEnding(error: unknown): SessionRunEnd {
  if (isCancellation(error)) return { aborted: true };
  const cause = (error as { cause?: unknown }).cause;
  const failure = cause instanceof ApplicationFailure ? fromApplicationFailure(cause) : toKeelError(error);
  const partial = failure.details.partial as KeptPartial | undefined;
  return partial ? { stopped: { status: failure.status, message: failure.message, partial } } : { failed: failure };
}

/**
 * Starts one run as a child generate run, in a scope `abortSessionRun` can cancel, and makes
 * it the session's run in flight until it ends; resolves once the run has started (so its id
 * can be followed), with how it will end.
 */
export async function startSessionRun(
  session: Session,
  { snapshot, base, messages, use, reportTo }: StartSessionRunOptions,
): Promise<{ ended: Promise<SessionRunEnd> }> {
  const runId = snapshot.runId;
  const scope = new CancellationScope();
  session.current = { snapshot, scope, ...(reportTo ? { requestedBy: reportTo.runId } : {}) };
  const finish = (end: SessionRunEnd): SessionRunEnd => {
    session.current = undefined;
    return end;
  };
  const input = {
    agent: session.agent,
    messages,
    artifacts: base.artifacts,
    session: { id: session.sessionId, usage: base.usage, ...(snapshot.sentBy ? { sentBy: snapshot.sentBy } : {}) },
    use,
    ...(reportTo ? { reportTo } : {}),
  };
  let child;
  try {
    child = await scope.run(() =>
      startChild(GENERATE_WORKFLOW, { workflowId: runId, args: [input], ...childSummary(session.agent, messages), ...inheritedMemo() }),
    );
  } catch (error) {
    return { ended: Promise.resolve(finish(runEnding(error))) };
  }
  const started = child;
  const ended = scope
    .run(() => started.result())
    .then(
      (result) => finish({ result: result as RunResult }),
      (error: unknown) => finish(runEnding(error)),
    );
  return { ended };
}

/** Stops the run in flight: its snapshot reads `aborting` until it settles as `aborted`. Returns that snapshot, or null when none runs. */
export function abortSessionRun(session: Session): Snapshot | null {
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

/** What a run that did not fail leaves: the session's next state, and the status and finish reason its snapshot settles with. */
interface RunOutcome {
  next: SessionState;
  status: Snapshot['status'];
  finishReason: string;
  message?: Message;
}

/**
 * The outcome of a run that did not fail. A result completes it with the run's history and
 * artifacts; a stopped run aborts it with what the run kept (or the base's); an aborted run
 * leaves the base. Usage adds to what the session had spent, whatever the base.
 */
function runOutcome(session: Session, base: SessionState, end: Exclude<SessionRunEnd, { failed: KeelError }>): RunOutcome {
  const spent = session.state.usage;
  if ('result' in end) {
    const { result } = end;
    return {
      next: { ...base, messages: history(result.messages), artifacts: result.artifacts, usage: addUsage(spent, result.usage, 'the usage of the run') },
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
      usage: addUsage(spent, partial?.usage ?? {}, 'the usage of the run'),
    };
    return { next, status: 'aborted', finishReason: 'aborted' };
  }
  return { next: { ...base, usage: spent }, status: 'aborted', finishReason: 'aborted' };
}

/** The answer to a run's invocation: its snapshot's ids and status, the state it left, and what it spent. */
function runAnswer(
  session: Session,
  {
    snapshot,
    end,
    status,
    finishReason,
    next,
  }: { snapshot: Snapshot; end: SessionRunEnd; status: Snapshot['status']; finishReason: string; next: SessionState },
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
 * Records how a run ended and answers its invocation. A failed run that was waited for
 * rejects the invocation and records nothing; a failed detached one marks its snapshot
 * failed and leaves the state. Any other end becomes the session's state and its snapshot
 * settles (recorded now if the run was not detached).
 */
export function settleSessionRun(
  session: Session,
  { snapshot, base, end, detached }: { snapshot: Snapshot; base: SessionState; end: SessionRunEnd; detached: boolean },
): InvokeOutput {
  if ('failed' in end) {
    if (!detached) throw refusal(end.failed.status, end.failed.message);
    updateSnapshot(session, snapshot.snapshotId, { status: 'failed', finishReason: 'failed', error: end.failed.toJSON(), messageCount: base.messages.length });
    return runAnswer(session, { snapshot, end, status: 'failed', finishReason: 'failed', next: base }, { error: end.failed.toJSON() });
  }
  const { next, status, finishReason, message } = runOutcome(session, base, end);
  session.state = next;
  const stopped = 'stopped' in end ? { error: { status: end.stopped.status, message: end.stopped.message } } : {};
  const recorded: Partial<Snapshot> = { status, finishReason, messageCount: next.messages.length, ...stopped };
  if (findSnapshot(session, snapshot.snapshotId)) updateSnapshot(session, snapshot.snapshotId, recorded);
  else session.snapshots = [...session.snapshots, { ...snapshot, ...recorded }];
  const output = 'result' in end && end.result.output !== undefined ? { output: end.result.output } : {};
  return runAnswer(
    session,
    { snapshot, end, status, finishReason, next },
    { ...(message ? { message, text: messageText(message) } : {}), ...output, ...stopped },
  );
}
