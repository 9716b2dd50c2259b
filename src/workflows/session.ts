/**
 * sessionWorkflow: the conversation of a server-managed agent (session: 'server'), one
 * workflow per session id. It keeps the history, artifacts, usage and custom state, and a
 * chain of snapshots, one per settled run. Each invocation is an `invoke` update (sent
 * with update-with-start, so the first starts the session) that starts one child generate
 * run; the session's runs go one at a time. A detached run answers at once with a pending
 * snapshot, rewritten when it settles. A failed run that was waited for records no snapshot
 * (a detached one is marked failed); a stopped one (budget) records an aborted one with what
 * it spent. The session continues-as-new between runs when Temporal suggests it, carrying
 * its state.
 *
 * This file holds the workflow and its handlers; the session's state and chain rules are in
 * session-state.ts, a session run and settling in session-run.ts.
 *
 * Runs in the workflow sandbox: deterministic, no I/O.
 */
import { allHandlersFinished, condition, log, setHandler, setWorkflowOptions, uuid4, workflowInfo } from '@temporalio/workflow';
import type { z } from 'zod';
import { KeelError, toApplicationFailure, toKeelError } from '../core/errors';
import { describeZodError } from '../core/schema-errors';
import { describeUndecodable, isUndecodable, requireOpened } from '../core/undecodable';
import {
  InvokeInputSchema,
  SessionInputSchema,
  type InvokeInput,
  type InvokeOutput,
  type SessionInput,
  type SessionState,
  type Snapshot,
} from '../core/session';
import { proxyDoor, resolveAgentDoor } from '../engine/activities';
import { RESOLVE_AGENT_OPTIONS } from '../engine/activity-errors';
import { abortSessionUpdate, abortRunSignal, childHoldsSignal, currentRunQuery, invokeUpdate, snapshotQuery, waitForSnapshotUpdate } from '../core/protocol';
import {
  anchorOf,
  carriedInput,
  findSnapshot,
  isSettled,
  latestSnapshot,
  newSession,
  refusal,
  rememberAnswer,
  resumePoint,
  snapshotNotFound,
  type Session,
} from './session-state';
import { abortSessionRun, settleSessionRun, startSessionRun, type SessionRunEnd } from './session-run';
import { continueOnCurrentBuild, sessionVersioningOptions } from '../engine/versioning';
import { principalOfMemo, samePrincipal } from '../core/principal';

// A regular activity, not a local one: a worker that lacks the agent (a rolling deploy) refuses it retryably, and another takes it.
const resolveAgent = proxyDoor(resolveAgentDoor, RESOLVE_AGENT_OPTIONS);

/** An invocation as parsed (defaults filled in). */
type Invocation = z.infer<typeof InvokeInputSchema>;

/**
 * The session: registers its handlers, then idles between runs and continues-as-new when
 * Temporal suggests it, carrying its state. A session whose agent was refused before its first
 * run ends instead.
 */
export async function sessionWorkflow(rawInput: SessionInput): Promise<void> {
  const session = openSession(rawInput);
  setHandler(
    snapshotQuery,
    (snapshotId?: string) => (snapshotId ? findSnapshot(session, snapshotId) : session.snapshots[session.snapshots.length - 1]) ?? null,
  );
  setHandler(waitForSnapshotUpdate, (snapshotId) => waitForSettled(session, snapshotId), {
    validator: (snapshotId: string) => assertSnapshotExists(session, snapshotId),
  });
  setHandler(abortSessionUpdate, () => abortSessionRun(session));
  setHandler(currentRunQuery, () => (session.current ? { ...session.current.snapshot } : null), {
    description: 'The snapshot of the run in flight (its runId is the run to steer), or null when none runs.',
  });
  // A run reports its holds to its parent, this session; they are followed on that run itself.
  setHandler(childHoldsSignal, () => undefined);
  setHandler(abortRunSignal, (raw) => abortRunAskedBy(session, raw));
  setHandler(invokeUpdate, (raw: InvokeInput) => invoke(session, raw), { validator: (raw: InvokeInput) => validateInvocation(session, raw) });

  // A run admitted while the handlers finish holds continue-as-new back until it settles.
  for (;;) {
    await condition(() => session.refusedAgent || (!session.busy && workflowInfo().continueAsNewSuggested));
    await condition(allHandlersFinished);
    if (session.refusedAgent) return;
    if (!session.busy) break;
  }
  await continueOnCurrentBuild<typeof sessionWorkflow>(carriedInput(session));
}

/** The session its input describes; an input that does not parse fails the workflow INVALID_ARGUMENT. */
function openSession(rawInput: SessionInput): Session {
  // Sealed with a key this worker lacks: the task fails and waits for a worker that has it.
  requireOpened(rawInput, 'the session input');
  const parsed = SessionInputSchema.safeParse(rawInput);
  if (!parsed.success)
    throw toApplicationFailure(
      new KeelError('INVALID_ARGUMENT', `invalid session input: ${isUndecodable(rawInput) ? describeUndecodable(rawInput) : describeZodError(parsed.error)}`),
    );
  return newSession({ ...parsed.data, workflowId: workflowInfo().workflowId });
}

/** Refuses a wait for a snapshot the session does not have. */
function assertSnapshotExists(session: Session, snapshotId: string): void {
  if (!findSnapshot(session, snapshotId)) throw snapshotNotFound(session, snapshotId);
}

/** Waits until the snapshot has settled, and answers it as it then stands. */
async function waitForSettled(session: Session, snapshotId: string): Promise<Snapshot> {
  await condition(() => isSettled(findSnapshot(session, snapshotId)!));
  return findSnapshot(session, snapshotId)!;
}

/**
 * Aborts the run in flight if the run that asked for it sent the signal. Temporal does not
 * validate signals: a malformed one is refused (logged), never fails the session or stops a run.
 */
function abortRunAskedBy(session: Session, raw: unknown): void {
  const requestedBy = (raw as { requestedBy?: unknown } | undefined)?.requestedBy;
  if (typeof requestedBy !== 'string' || requestedBy === '') {
    log.warn('refused an abortRun signal', {
      reason: `expected { requestedBy: <run id> }, got ${isUndecodable(raw) ? describeUndecodable(raw) : (JSON.stringify(raw) ?? 'nothing')}`,
    });
    return;
  }
  if (session.current && session.current.requestedBy === requestedBy) abortSessionRun(session);
}

/** The invocation, parsed; one that does not parse is refused INVALID_ARGUMENT. */
function parseInvocation(raw: InvokeInput): Invocation {
  const request = InvokeInputSchema.safeParse(raw);
  if (!request.success) throw refusal('INVALID_ARGUMENT', `invalid invocation: ${describeZodError(request.error)}`);
  return request.data;
}

/**
 * Refuses, before anything is recorded, an invocation that does not parse, one that sends
 * client-managed state, and one that starts from a snapshot or run the session does not have.
 */
function validateInvocation(session: Session, raw: InvokeInput): void {
  const request = parseInvocation(raw);
  const { agent, sessionId } = session;
  if (request.state !== undefined)
    throw refusal('INVALID_ARGUMENT', `agent "${agent}" keeps its conversation on the server (session: 'server'): send a session id, not state`);
  if (request.snapshotId && !findSnapshot(session, request.snapshotId)) throw snapshotNotFound(session, request.snapshotId);
  if (request.fromRunId && !session.snapshots.some((snapshot) => snapshot.runId === request.fromRunId)) {
    throw refusal('NOT_FOUND', `no snapshot of run "${request.fromRunId}" in session "${sessionId}" of agent "${agent}"`);
  }
  // A sender checked against whom the session belonged; if it was started by another in between, it is not theirs to find.
  if (request.ifBelongsTo && !samePrincipal(request.ifBelongsTo, principalOfMemo(workflowInfo().memo)))
    throw refusal('NOT_FOUND', `session "${sessionId}" of agent "${agent}" does not exist`);
}

/**
 * Runs one invocation as a child run, one run at a time. An invocation sent again with a request
 * id already answered gets that answer without a run. The agent is checked before the first
 * run. A run that is waited for answers once it settles; a detached one answers at once with
 * its pending snapshot and keeps the session busy until it settles.
 */
async function invoke(session: Session, raw: InvokeInput): Promise<InvokeOutput> {
  const request = parseInvocation(raw);
  // One run at a time: every waiting invocation wakes when a run ends, so each checks again.
  while (session.busy) await condition(() => !session.busy);
  const earlier = request.requestId ? session.answered[request.requestId] : undefined;
  if (earlier) return earlier;
  session.busy = true;
  let detached = false;
  try {
    if (!session.checkedAgent) await checkAgent(session);
    const { snapshot, base } = beginRun(session, request);
    const { ended } = await startSessionRun(session, {
      snapshot,
      base,
      messages: [...base.messages, ...request.messages],
      use: request.use,
      ...(request.reportTo ? { reportTo: request.reportTo } : {}),
    });
    if (!request.detach) return rememberAnswer(session, request.requestId, settleSessionRun(session, { snapshot, base, end: await ended, detached: false }));
    detached = true;
    settleLater(session, { snapshot, base, ended });
    return rememberAnswer(session, request.requestId, pendingAnswer(session, snapshot, base));
  } finally {
    if (!detached) session.busy = false;
  }
}

/**
 * Looks the agent up and
 * refuses the invocation when it is missing or keeps its sessions on the client; a session
 * refused before its first run ends. It returns the lookup's own `.then`, so the caller's
 * `await` resumes on the same microtask as an `await` of the lookup would.
 */
function checkAgent(session: Session): Promise<void> {
  const { agent } = session;
  return resolveAgent({ agent }).then(
    (spec) => {
      if (spec.session !== 'server') {
        session.refusedAgent = session.snapshots.length === 0;
        throw refusal('INVALID_ARGUMENT', `agent "${agent}" is client-managed (session: 'client'): send its state, not a session id`);
      }
      session.checkedAgent = true;
    },
    (error: unknown) => {
      const failure = toKeelError(error);
      session.refusedAgent = session.snapshots.length === 0;
      throw refusal(failure.status, failure.message);
    },
  );
}

/**
 * Where a new run starts: the state it gets (from the snapshot or run asked for, else the
 * session's), and its pending snapshot, chained to where it starts (a failed run left no
 * state: to its parent). A start on a branch the session left is refused FAILED_PRECONDITION.
 */
function beginRun(session: Session, request: Invocation): { snapshot: Snapshot; base: SessionState } {
  const fromSnapshot = request.snapshotId
    ? findSnapshot(session, request.snapshotId)
    : request.fromRunId
      ? session.snapshots.find((snapshot) => snapshot.runId === request.fromRunId)
      : undefined;
  const base = fromSnapshot ? resumePoint(session, fromSnapshot) : session.state;
  if (!base)
    throw refusal('FAILED_PRECONDITION', `snapshot "${fromSnapshot!.snapshotId}" is on a branch this session left; start from a snapshot on the current one`);
  const parent = fromSnapshot ? anchorOf(session, fromSnapshot) : latestSnapshot(session);
  const now = new Date().toISOString();
  const snapshot: Snapshot = {
    snapshotId: uuid4(),
    sessionId: session.sessionId,
    ...(parent ? { parentId: parent.snapshotId } : {}),
    status: 'pending',
    runId: `${session.workflowId}/run-${++session.runs}`,
    createdAt: now,
    updatedAt: now,
    messageCount: base.messages.length,
    ...(request.sentBy ? { sentBy: request.sentBy } : {}),
  };
  return { snapshot, base };
}

/** A detached run: its pending snapshot is recorded now; the run settles it when it ends, and only then may the next run start. */
function settleLater(session: Session, { snapshot, base, ended }: { snapshot: Snapshot; base: SessionState; ended: Promise<SessionRunEnd> }): void {
  session.snapshots = [...session.snapshots, snapshot];
  void ended
    .then((end) => settleSessionRun(session, { snapshot, base, end, detached: true }))
    .finally(() => {
      session.busy = false;
    });
}

/** The answer to a detached invocation: its pending snapshot, nothing spent yet. */
function pendingAnswer(session: Session, snapshot: Snapshot, base: SessionState): InvokeOutput {
  return {
    sessionId: session.sessionId,
    snapshotId: snapshot.snapshotId,
    runId: snapshot.runId,
    status: 'pending',
    finishReason: 'detached',
    text: '',
    artifacts: base.artifacts,
    usage: {},
    sessionUsage: base.usage,
  };
}

// A session moves to the current build at its next workflow task; its memo's behavior is for its runs (versioning.ts).
setWorkflowOptions(sessionVersioningOptions, sessionWorkflow);
