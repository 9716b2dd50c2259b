/**
 * sessionWorkflow: the conversation of a server-managed agent (session: 'server'), one
 * workflow per session id. It keeps the history, artifacts, usage and custom state, and a
 * chain of snapshots, one per settled turn. Each turn is an `invoke` update (sent with
 * update-with-start, so the first turn starts the session) that runs the turn as a child
 * generate run; turns run one at a time. A detached turn answers at once with a pending
 * snapshot, rewritten when it settles. A failed turn records no snapshot; a stopped one
 * (budget) records an aborted one with what it spent. The session continues-as-new between
 * turns when Temporal suggests it, carrying its state.
 *
 * Runs in the workflow sandbox: deterministic, no I/O.
 */
import {
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  startChild,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { KeelError, fromApplicationFailure, toApplicationFailure, toKeelError } from '../core/errors';
import type { Artifact } from '../core/artifacts';
import { addUsage, messageText, type Message, type Usage } from '../core/messages';
import type { MiddlewareRef, RunResult } from '../core/run';
import { describeZodError } from '../core/schema-errors';
import { describeUndecodable, isUndecodable } from '../core/undecodable';
import {
  InvokeInputSchema,
  KEPT_ANSWERS,
  KEPT_SNAPSHOTS,
  SessionInputSchema,
  type InvokeInput,
  type InvokeOutput,
  type SessionInput,
  type SessionState,
  type Snapshot,
} from '../core/session';
import type { KeelActivities } from '../activities/types';
import { RESOLVE_AGENT_OPTIONS } from './activity-errors';
import {
  GENERATE_WORKFLOW,
  abortSessionUpdate,
  abortTurnSignal,
  childInterruptsSignal,
  invokeUpdate,
  snapshotQuery,
  waitForSnapshotUpdate,
} from './definitions';

const { resolveAgent: resolveAgentLocally } = proxyLocalActivities<KeelActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['NOT_FOUND', 'INVALID_ARGUMENT', 'INTERNAL'] },
});

/**
 * The patch that made a session look its agent up with a regular activity (sessions from
 * before it replay with the local one): a local activity never leaves the worker running the
 * session, so a worker that lacks the agent (a rolling deploy) refused the session for good.
 */
export const SESSION_RESOLVE_AS_ACTIVITY_PATCH = 'keel-session-resolve-agent-as-activity';
const { resolveAgent: resolveAgentActivity } = proxyActivities<KeelActivities>(RESOLVE_AGENT_OPTIONS);

/** An ApplicationFailure (what rejects an update) with a status and a message. */
function refusal(status: KeelError['status'], message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: status, nonRetryable: true, message });
}

/** How a turn's run ended. */
/** What a stopped run kept (RunStoppedError's partial result). */
type KeptPartial = { messages?: Message[]; usage?: Usage; artifacts?: Artifact[] };
type TurnEnd =
  { result: RunResult } | { stopped: { status: KeelError['status']; message: string; partial?: KeptPartial } } | { aborted: true } | { failed: KeelError };

/** A settled snapshot status. */
const settled = (snapshot: Snapshot) => snapshot.status !== 'pending' && snapshot.status !== 'aborting';

/** The session. */
export async function sessionWorkflow(rawInput: SessionInput): Promise<void> {
  const parsed = SessionInputSchema.safeParse(rawInput);
  if (!parsed.success)
    throw toApplicationFailure(
      new KeelError('INVALID_ARGUMENT', `invalid session input: ${isUndecodable(rawInput) ? describeUndecodable(rawInput) : describeZodError(parsed.error)}`),
    );
  const { agent, sessionId } = parsed.data;
  let state: SessionState = parsed.data.state;
  let snapshots: Snapshot[] = parsed.data.snapshots;
  let turns = parsed.data.turns;
  let answered: Record<string, InvokeOutput> = parsed.data.answered;
  /** Remembers the answer of an invocation that carried a request id (the latest KEPT_ANSWERS). */
  const remember = (requestId: string | undefined, output: InvokeOutput): InvokeOutput => {
    if (requestId)
      answered = Object.fromEntries([...Object.entries(answered).filter(([id]) => id !== requestId), [requestId, output] as const].slice(-KEPT_ANSWERS));
    return output;
  };
  const sessionRunId = workflowInfo().workflowId;
  let busy = false;
  let checkedAgent = false;
  /** Set when the session was started for an agent that cannot have one: it ends at once. */
  let refusedAgent = false;
  let current: { snapshot: Snapshot; scope: CancellationScope; requestedBy?: string } | undefined;

  const find = (snapshotId: string): Snapshot | undefined => snapshots.find((snapshot) => snapshot.snapshotId === snapshotId);
  /** The tip of the chain: the latest turn that left a state (completed or aborted). */
  const latest = (): Snapshot | undefined => [...snapshots].reverse().find((snapshot) => snapshot.status === 'completed' || snapshot.status === 'aborted');
  /** The snapshot whose state a turn from `snapshot` starts with: itself, or for a failed turn its parent. */
  const anchorOf = (snapshot: Snapshot): Snapshot | undefined =>
    snapshot.status === 'failed' ? (snapshot.parentId ? find(snapshot.parentId) : undefined) : snapshot;
  /**
   * The state a turn starting from `snapshot` gets: the history up to it, and the session's
   * artifacts, usage (cumulative: a branch does not reset what the session spent) and custom
   * data. History only grows along the chain, so the snapshot must be on the chain from the
   * tip (or a failed turn started from a snapshot on it); otherwise undefined.
   */
  const resumePoint = (snapshot: Snapshot): SessionState | undefined => {
    const onChain = new Set<string>();
    for (let at = latest(); at; at = at.parentId ? find(at.parentId) : undefined) onChain.add(at.snapshotId);
    const anchor = anchorOf(snapshot);
    if (anchor ? !onChain.has(anchor.snapshotId) : onChain.size > 0 && snapshot.messageCount > 0) return undefined;
    return { ...state, messages: state.messages.slice(0, snapshot.messageCount) };
  };
  const update = (snapshotId: string, change: Partial<Snapshot>) => {
    snapshots = snapshots.map((snapshot) => (snapshot.snapshotId === snapshotId ? { ...snapshot, ...change, updatedAt: new Date().toISOString() } : snapshot));
  };
  const notFound = (snapshotId: string) => refusal('NOT_FOUND', `snapshot "${snapshotId}" not found in session "${sessionId}" of agent "${agent}"`);

  setHandler(snapshotQuery, (snapshotId?: string) => (snapshotId ? find(snapshotId) : snapshots[snapshots.length - 1]) ?? null);

  setHandler(
    waitForSnapshotUpdate,
    async (snapshotId) => {
      await condition(() => settled(find(snapshotId)!));
      return find(snapshotId)!;
    },
    {
      validator: (snapshotId) =>
        void (
          find(snapshotId) ??
          (() => {
            throw notFound(snapshotId);
          })()
        ),
    },
  );

  /** Stops the turn in flight: its snapshot reads `aborting` until it settles as `aborted`. */
  const abortCurrent = (): Snapshot | null => {
    if (!current) return null;
    current.snapshot = { ...current.snapshot, status: 'aborting', updatedAt: new Date().toISOString() };
    if (find(current.snapshot.snapshotId)) update(current.snapshot.snapshotId, { status: 'aborting' });
    current.scope.cancel();
    return current.snapshot;
  };
  setHandler(abortSessionUpdate, abortCurrent);
  // A turn reports its holds to its parent, this session; they are followed on the turn's own run.
  setHandler(childInterruptsSignal, () => undefined);
  setHandler(abortTurnSignal, (raw) => {
    // Signals are not validated by Temporal: a malformed one is refused (logged), never fails the session or stops a turn.
    const requestedBy = (raw as { requestedBy?: unknown } | undefined)?.requestedBy;
    if (typeof requestedBy !== 'string' || requestedBy === '') {
      log.warn('refused an abortTurn signal', {
        reason: `expected { requestedBy: <run id> }, got ${isUndecodable(raw) ? describeUndecodable(raw) : (JSON.stringify(raw) ?? 'nothing')}`,
      });
      return;
    }
    if (current && current.requestedBy === requestedBy) abortCurrent();
  });

  /**
   * Starts one turn as a child generate run, in a scope `abort` can cancel; resolves once the
   * run has started (so its id can be followed), with how it will end.
   */
  const startTurn = async ({
    snapshot,
    base,
    messages,
    use,
    reportTo,
  }: {
    snapshot: Snapshot;
    base: SessionState;
    messages: Message[];
    use: MiddlewareRef[];
    reportTo?: { runId: string; key: string };
  }): Promise<{ ended: Promise<TurnEnd> }> => {
    const runId = snapshot.runId;
    const scope = new CancellationScope();
    current = { snapshot, scope, ...(reportTo ? { requestedBy: reportTo.runId } : {}) };
    const ending = (error: unknown): TurnEnd => {
      if (isCancellation(error)) return { aborted: true };
      const cause = (error as { cause?: unknown }).cause;
      const failure = cause instanceof ApplicationFailure ? fromApplicationFailure(cause) : toKeelError(error);
      const partial = failure.details.partial as KeptPartial | undefined;
      return partial ? { stopped: { status: failure.status, message: failure.message, partial } } : { failed: failure };
    };
    const finish = (end: TurnEnd): TurnEnd => {
      current = undefined;
      return end;
    };
    let child;
    try {
      child = await scope.run(() =>
        startChild(GENERATE_WORKFLOW, {
          workflowId: runId,
          args: [{ agent, messages, artifacts: base.artifacts, session: { id: sessionId, usage: base.usage }, use, ...(reportTo ? { reportTo } : {}) }],
        }),
      );
    } catch (error) {
      return { ended: Promise.resolve(finish(ending(error))) };
    }
    const started = child;
    const ended = scope
      .run(() => started.result())
      .then(
        (result) => finish({ result: result as RunResult }),
        (error: unknown) => finish(ending(error)),
      );
    return { ended };
  };

  /** Records how a turn ended: the new state and its snapshot (none for a failed, undetached turn). */
  const settle = (snapshot: Snapshot, base: SessionState, end: TurnEnd, detached: boolean): InvokeOutput => {
    const history = (messages: Message[]) => messages.filter((message) => message.role !== 'system');
    const output = (status: Snapshot['status'], finishReason: string, next: SessionState, extra: Partial<InvokeOutput> = {}): InvokeOutput => ({
      sessionId,
      snapshotId: snapshot.snapshotId,
      runId: snapshot.runId,
      status,
      finishReason,
      text: '',
      artifacts: next.artifacts,
      usage: 'result' in end ? end.result.usage : 'stopped' in end ? (end.stopped.partial?.usage ?? {}) : {},
      sessionUsage: next.usage,
      ...extra,
    });
    if ('failed' in end) {
      if (!detached) throw refusal(end.failed.status, end.failed.message);
      update(snapshot.snapshotId, { status: 'failed', finishReason: 'failed', error: end.failed.toJSON(), messageCount: base.messages.length });
      return output('failed', 'failed', base, { error: end.failed.toJSON() });
    }
    let next: SessionState;
    let status: Snapshot['status'];
    let finishReason: string;
    let message: Message | undefined;
    if ('result' in end) {
      next = { ...base, messages: history(end.result.messages), artifacts: end.result.artifacts, usage: addUsage(state.usage, end.result.usage) };
      status = 'completed';
      finishReason = end.result.finishReason;
      message = end.result.message;
    } else if ('stopped' in end) {
      const partial = end.stopped.partial;
      next = {
        ...base,
        messages: history(partial?.messages ?? base.messages),
        artifacts: partial?.artifacts ?? base.artifacts,
        usage: addUsage(state.usage, partial?.usage ?? {}),
      };
      status = 'aborted';
      finishReason = 'aborted';
    } else {
      next = { ...base, usage: state.usage };
      status = 'aborted';
      finishReason = 'aborted';
    }
    state = next;
    const recorded: Partial<Snapshot> = {
      status,
      finishReason,
      messageCount: next.messages.length,
      ...('stopped' in end ? { error: { status: end.stopped.status, message: end.stopped.message } } : {}),
    };
    if (find(snapshot.snapshotId)) update(snapshot.snapshotId, recorded);
    else snapshots = [...snapshots, { ...snapshot, ...recorded }];
    return output(status, finishReason, next, {
      ...(message ? { message, text: messageText(message) } : {}),
      ...('stopped' in end ? { error: { status: end.stopped.status, message: end.stopped.message } } : {}),
    });
  };

  setHandler(
    invokeUpdate,
    async (raw: InvokeInput): Promise<InvokeOutput> => {
      const parsedRequest = InvokeInputSchema.safeParse(raw);
      if (!parsedRequest.success) throw refusal('INVALID_ARGUMENT', `invalid invocation: ${describeZodError(parsedRequest.error)}`);
      const request = parsedRequest.data;
      // One turn at a time: every waiting invocation wakes when a turn ends, so each checks again.
      while (busy) await condition(() => !busy);
      // The same invocation sent again (a retried activity) gets its first answer.
      const earlier = request.requestId ? answered[request.requestId] : undefined;
      if (earlier) return earlier;
      busy = true;
      let detachedTurn = false;
      try {
        if (!checkedAgent) {
          const resolveAgent = patched(SESSION_RESOLVE_AS_ACTIVITY_PATCH) ? resolveAgentActivity : resolveAgentLocally;
          const spec = await resolveAgent({ agent }).catch((error: unknown) => {
            const failure = toKeelError(error);
            refusedAgent = snapshots.length === 0;
            throw refusal(failure.status, failure.message);
          });
          if (spec.session !== 'server') {
            refusedAgent = snapshots.length === 0;
            throw refusal('INVALID_ARGUMENT', `agent "${agent}" is client-managed (session: 'client'): send its state, not a session id`);
          }
          checkedAgent = true;
        }
        const fromSnapshot = request.snapshotId
          ? find(request.snapshotId)
          : request.fromRunId
            ? snapshots.find((snapshot) => snapshot.runId === request.fromRunId)
            : undefined;
        const base = fromSnapshot ? resumePoint(fromSnapshot) : state;
        if (!base)
          throw refusal(
            'FAILED_PRECONDITION',
            `snapshot "${fromSnapshot!.snapshotId}" is on a branch this session left; start from a snapshot on the current one`,
          );
        // The new turn continues the chain from where it starts (a failed turn left no state: from its parent).
        const parent = fromSnapshot ? anchorOf(fromSnapshot) : latest();
        const now = new Date().toISOString();
        const snapshot: Snapshot = {
          snapshotId: uuid4(),
          sessionId,
          ...(parent ? { parentId: parent.snapshotId } : {}),
          status: 'pending',
          runId: `${sessionRunId}/turn-${++turns}`,
          createdAt: now,
          updatedAt: now,
          messageCount: base.messages.length,
        };
        const { ended } = await startTurn({
          snapshot,
          base,
          messages: [...base.messages, ...request.messages],
          use: request.use,
          ...(request.reportTo ? { reportTo: request.reportTo } : {}),
        });
        if (!request.detach) return remember(request.requestId, settle(snapshot, base, await ended, false));
        // Detached: answer now with the pending snapshot; the turn settles it later.
        detachedTurn = true;
        snapshots = [...snapshots, snapshot];
        void ended
          .then((end) => settle(snapshot, base, end, true))
          .finally(() => {
            busy = false;
          });
        return remember(request.requestId, {
          sessionId,
          snapshotId: snapshot.snapshotId,
          runId: snapshot.runId,
          status: 'pending',
          finishReason: 'detached',
          text: '',
          artifacts: base.artifacts,
          usage: {},
          sessionUsage: base.usage,
        });
      } finally {
        if (!detachedTurn) busy = false;
      }
    },
    {
      validator: (raw: InvokeInput) => {
        const request = InvokeInputSchema.safeParse(raw);
        if (!request.success) throw refusal('INVALID_ARGUMENT', `invalid invocation: ${describeZodError(request.error)}`);
        if (request.data.state !== undefined)
          throw refusal('INVALID_ARGUMENT', `agent "${agent}" keeps its conversation on the server (session: 'server'): send a session id, not state`);
        if (request.data.snapshotId && !find(request.data.snapshotId)) throw notFound(request.data.snapshotId);
        if (request.data.fromRunId && !snapshots.some((snapshot) => snapshot.runId === request.data.fromRunId)) {
          throw refusal('NOT_FOUND', `no snapshot of run "${request.data.fromRunId}" in session "${sessionId}" of agent "${agent}"`);
        }
      },
    },
  );

  // Idle between turns; continue-as-new when Temporal suggests it, carrying the state. A turn
  // admitted while the handlers finished holds it back until it settles.
  for (;;) {
    await condition(() => refusedAgent || (!busy && workflowInfo().continueAsNewSuggested));
    await condition(allHandlersFinished);
    if (refusedAgent) return;
    if (!busy) break;
  }
  await continueAsNew<typeof sessionWorkflow>({ agent, sessionId, state, snapshots: snapshots.filter(settled).slice(-KEPT_SNAPSHOTS), turns, answered });
}
