/**
 * The state of one session workflow, as one explicit object that its handlers and run steps
 * pass along, and the rules of its snapshot chain: where the tip is, which snapshot a run may
 * start from and with what state, and what continue-as-new carries. Runs in the workflow:
 * deterministic, no I/O.
 */
import { ApplicationFailure, type CancellationScope } from '@temporalio/workflow';
import type { KeelError } from '../core/errors';
import { KEPT_ANSWERS, KEPT_SNAPSHOTS, type InvokeOutput, type SessionInput, type SessionState, type Snapshot } from '../core/session';

/** The run in flight: its snapshot as it stands, the scope that cancels it, and the run that asked for it (if it reports to one). */
export interface CurrentRun {
  snapshot: Snapshot;
  scope: CancellationScope;
  requestedBy?: string;
}

/**
 * One session's state. Continue-as-new carries its agent, session id, state, settled
 * snapshots, run count and answers (`carriedInput`), not the flags or the run in flight;
 * the run in flight holds a cancellation scope, so the object itself is not a payload.
 */
export interface Session {
  readonly agent: string;
  readonly sessionId: string;
  /** The session's workflow id: its runs have the ids `<workflowId>/run-<n>`. */
  readonly workflowId: string;
  /** The conversation as the tip of the chain left it. */
  state: SessionState;
  /** One snapshot per run, oldest first. */
  snapshots: Snapshot[];
  /** Runs started so far (numbers their run ids). */
  runs: number;
  /** Answers of the latest invocations that carried a request id, by id. */
  answered: Record<string, InvokeOutput>;
  /** Set while a run is admitted and not yet settled: other invocations wait. */
  busy: boolean;
  /** Set once the agent was found to keep its sessions on the server. */
  checkedAgent: boolean;
  /** Set when the session was started for an agent that cannot have one: it ends at once. */
  refusedAgent: boolean;
  current?: CurrentRun;
}

/** What a session starts with: its parsed input and its workflow id. */
export interface NewSessionOptions {
  agent: string;
  sessionId: string;
  workflowId: string;
  state: SessionState;
  snapshots: Snapshot[];
  runs: number;
  answered: Record<string, InvokeOutput>;
}

/** A session as its input left it, with no run admitted and its agent not yet checked. */
export function newSession({ agent, sessionId, workflowId, state, snapshots, runs, answered }: NewSessionOptions): Session {
  return { agent, sessionId, workflowId, state, snapshots, runs, answered, busy: false, checkedAgent: false, refusedAgent: false };
}

/** An ApplicationFailure (what rejects an update) with a status and a message. */
export function refusal(status: KeelError['status'], message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: status, nonRetryable: true, message });
}

/** The refusal for a snapshot id the session does not have. */
export function snapshotNotFound(session: Session, snapshotId: string): ApplicationFailure {
  return refusal('NOT_FOUND', `snapshot "${snapshotId}" not found in session "${session.sessionId}" of agent "${session.agent}"`);
}

/** A snapshot is settled once it is neither `pending` nor `aborting`. */
export function isSettled(snapshot: Snapshot): boolean {
  return snapshot.status !== 'pending' && snapshot.status !== 'aborting';
}

/** The snapshot with this id, if the session has it. */
export function findSnapshot(session: Session, snapshotId: string): Snapshot | undefined {
  return session.snapshots.find((snapshot) => snapshot.snapshotId === snapshotId);
}

/** The tip of the chain: the latest run that left a state (completed or aborted). */
export function latestSnapshot(session: Session): Snapshot | undefined {
  return [...session.snapshots].reverse().find((snapshot) => snapshot.status === 'completed' || snapshot.status === 'aborted');
}

/** The snapshot whose state a run from `snapshot` starts with: itself, or for a failed run its parent. */
export function anchorOf(session: Session, snapshot: Snapshot): Snapshot | undefined {
  return snapshot.status === 'failed' ? (snapshot.parentId ? findSnapshot(session, snapshot.parentId) : undefined) : snapshot;
}

/**
 * The state a run starting from `snapshot` gets: the history up to it, and the session's
 * artifacts, usage (cumulative: a branch does not reset what the session spent) and custom
 * data. History only grows along the chain, so the snapshot must be on the chain from the
 * tip (or a failed run started from a snapshot on it); otherwise undefined.
 */
export function resumePoint(session: Session, snapshot: Snapshot): SessionState | undefined {
  const onChain = new Set<string>();
  for (let at = latestSnapshot(session); at; at = at.parentId ? findSnapshot(session, at.parentId) : undefined) onChain.add(at.snapshotId);
  const anchor = anchorOf(session, snapshot);
  if (anchor ? !onChain.has(anchor.snapshotId) : onChain.size > 0 && snapshot.messageCount > 0) return undefined;
  return { ...session.state, messages: session.state.messages.slice(0, snapshot.messageCount) };
}

/** Changes the snapshot with this id (stamping `updatedAt`); a snapshot not recorded is left alone. */
export function updateSnapshot(session: Session, snapshotId: string, change: Partial<Snapshot>): void {
  session.snapshots = session.snapshots.map((snapshot) =>
    snapshot.snapshotId === snapshotId ? { ...snapshot, ...change, updatedAt: new Date().toISOString() } : snapshot,
  );
}

/** Remembers the answer of an invocation that carried a request id (the latest KEPT_ANSWERS), and returns it. */
export function rememberAnswer(session: Session, requestId: string | undefined, output: InvokeOutput): InvokeOutput {
  if (requestId)
    session.answered = Object.fromEntries(
      [...Object.entries(session.answered).filter(([id]) => id !== requestId), [requestId, output] as const].slice(-KEPT_ANSWERS),
    );
  return output;
}

/** The input of the session's next run: its state, its latest KEPT_SNAPSHOTS settled snapshots, its run count and remembered answers. */
export function carriedInput(session: Session): SessionInput {
  const { agent, sessionId, state, snapshots, runs, answered } = session;
  return { agent, sessionId, state, snapshots: snapshots.filter(isSettled).slice(-KEPT_SNAPSHOTS), runs, answered };
}
