/**
 * Sub-agent runs: a middleware (Agents) runs another agent as a child generate workflow,
 * whose id extends the parent's (`<runId>/<agent>-<n>`), so the tree of runs is visible in
 * Temporal. The child gets the middleware the parent's hand down (`forChildRuns`), and its
 * usage counts in the parent's. Runs in the workflow: no I/O.
 */
import {
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowFailure,
  ParentClosePolicy,
  executeChild,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  startChild,
} from '@temporalio/workflow';
import { KeelError, fromApplicationFailure, toKeelError } from '../core/errors';
import { addUsage, type Usage } from '../core/messages';
import type { MiddlewareRef, RunInputOptions, RunResult } from '../core/run';
import { isSettled, taskIdOf, type TaskRecord, type TaskReport } from '../core/tasks';
import type { KeelActivities } from '../activities/types';
import type { AgentRunOptions, AgentRunOutcome, SessionTurnOptions, TaskControl } from '../middleware/types';
import { sessionWorkflowId, type InvokeOutput } from '../core/session';
import { asKeelError } from './activity-errors';
import { GENERATE_WORKFLOW, abortTurnSignal, reportHoldsToSignal } from './definitions';
import type { RunState } from './run-state';
import { expectReports } from './reporters';
import { SIGNED_TASKS_PATCH, sign, verify } from './proofs';

/** The patch that made a run follow the still-running tasks of its conversation's earlier runs. */
export const FOLLOW_TASKS_PATCH = 'keel-follow-conversation-tasks';

/** The KeelError a failed child run ended with (its status kept), and the usage it reported. */
function childFailure(error: unknown, agent: string): { error: KeelError; usage?: Usage } {
  const cause = error instanceof ChildWorkflowFailure ? error.cause : error;
  if (isCancellation(cause ?? error)) return { error: new KeelError('CANCELLED', `the run of agent "${agent}" was cancelled`) };
  if (cause instanceof ApplicationFailure) {
    const failure = fromApplicationFailure(cause);
    const partial = failure.details.partial as { usage?: Usage } | undefined;
    return { error: failure, ...(partial?.usage ? { usage: partial.usage } : {}) };
  }
  const failure = toKeelError(cause ?? error);
  return { error: new KeelError(failure.status, `agent "${agent}": ${failure.message}`, failure.details, failure.classified) };
}

/** The id and input of the next sub-agent run of `run`. */
function childRun(
  run: RunState,
  inherited: () => MiddlewareRef[],
  { agent, messages, artifacts = [] }: AgentRunOptions,
): { runId: string; input: RunInputOptions } {
  run.children += 1;
  const key = `${agent}-${run.children}`;
  const runId = `${run.runId}/${key}`;
  expectReports(run, key, { runId });
  return { runId, input: { agent, messages, artifacts, use: inherited() } };
}

/** What the sub-agent runners of a run need. */
export interface SubAgentRunnerOptions {
  run: RunState;
  /** The middleware the run hands down to its sub-agents (`forChildRuns`). */
  inherited: () => MiddlewareRef[];
  /** Forgets the holds of a sub-agent run that has settled. */
  forgetChild: (runId: string) => void;
}

/**
 * True when the run itself is being cancelled (not only a child of it): then the cancellation
 * ends the run; a child cancelled on its own is that child's failure.
 */
function runCancelled(error: unknown): boolean {
  return isCancellation(error) && CancellationScope.current().consideredCancelled;
}

/** Runs sub-agents of `run` as child workflows, each with the middleware `inherited()` hands down. */
export function agentRunner({ run, inherited, forgetChild }: SubAgentRunnerOptions): (options: AgentRunOptions) => Promise<AgentRunOutcome> {
  return async (options) => {
    const { agent } = options;
    const { runId, input } = childRun(run, inherited, options);
    try {
      const result: RunResult = await executeChild(GENERATE_WORKFLOW, { workflowId: runId, args: [input] });
      run.status.usage = addUsage(run.status.usage, result.usage);
      forgetChild(runId);
      return { runId, result };
    } catch (error) {
      if (runCancelled(error)) throw error;
      forgetChild(runId);
      const { error: failure, usage } = childFailure(error, agent);
      if (usage) run.status.usage = addUsage(run.status.usage, usage);
      return { runId, error: failure };
    }
  };
}

const { inspectTasks } = proxyActivities<KeelActivities>({
  startToCloseTimeout: '1 minute',
  // Temporal unreachable for a while: keep trying (the reads are idempotent) rather than fail the run.
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
  scheduleToCloseTimeout: '10 minutes',
});

/** How long a wait may take past its own deadline before its activity is given up. */
const WAIT_MARGIN_MS = 60_000;

/**
 * The background tasks of `run`: sub-agent runs started with parent-close policy ABANDON,
 * so they go on when this run finishes; asked about through activities (a task may have
 * been started by an earlier run of the conversation).
 */
export function taskControl({ run, inherited, forgetChild }: SubAgentRunnerOptions): TaskControl {
  const reachable: TaskControl['reachable'] = async (claims) => {
    const own = new Set(run.tasks.map((record) => record.taskId));
    if (!patched(SIGNED_TASKS_PATCH)) return new Set([...own, ...claims.map((claim) => claim.taskId)]);
    // Each (id, proof) is checked once per run: a proof does not stop being valid.
    const checkKey = (claim: { taskId: string; proof?: string }) => `${claim.taskId} ${claim.proof ?? ''}`;
    const unchecked = claims.filter(
      (claim): claim is { taskId: string; proof: string } =>
        !own.has(claim.taskId) && typeof claim.proof === 'string' && run.vouchedTasks?.[checkKey(claim)] === undefined,
    );
    const answers = await verify(unchecked.map((claim) => ({ subject: { kind: 'task' as const, taskId: claim.taskId }, proof: claim.proof })));
    run.vouchedTasks = { ...run.vouchedTasks, ...Object.fromEntries(unchecked.map((claim, index) => [checkKey(claim), answers[index] === true])) };
    return new Set([...own, ...claims.filter((claim) => run.vouchedTasks?.[checkKey(claim)] === true).map((claim) => claim.taskId)]);
  };
  return {
    async start(options) {
      const { runId, input } = childRun(run, inherited, options);
      await startChild(GENERATE_WORKFLOW, { workflowId: runId, args: [input], parentClosePolicy: ParentClosePolicy.ABANDON });
      const record: TaskRecord = {
        taskId: taskIdOf(options.agent, runId),
        agent: options.agent,
        runId,
        ...(options.name !== undefined ? { name: options.name } : {}),
      };
      run.tasks = [...run.tasks, record];
      return record;
    },
    records: () => run.tasks,
    async inspect(runIds) {
      return learnOf(run, await inspectTasks({ runIds: [...runIds] }), forgetChild);
    },
    async wait(runIds, { timeoutMs, first }) {
      const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
      const { awaitTasks } = proxyActivities<KeelActivities>({
        startToCloseTimeout: timeoutMs === undefined ? '3650 days' : timeoutMs + WAIT_MARGIN_MS,
        heartbeatTimeout: '10 seconds',
        retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
        summary: 'wait for background tasks',
      });
      const { reports, timedOut } = await awaitTasks({ runIds: [...runIds], first, ...(deadline !== undefined ? { deadline } : {}) });
      return { reports: learnOf(run, reports, forgetChild), timedOut };
    },
    async abort(runId) {
      // A run that already ended cannot be cancelled; asking is then a no-op.
      await getExternalWorkflowHandle(runId)
        .cancel()
        .catch(() => undefined);
      if (!run.aborting.includes(runId)) run.aborting = [...run.aborting, runId];
    },
    async prove(taskIds) {
      if (taskIds.length === 0 || !patched(SIGNED_TASKS_PATCH)) return {};
      const proofs = await sign(taskIds.map((taskId) => ({ kind: 'task' as const, taskId })));
      return Object.fromEntries(taskIds.map((taskId, index) => [taskId, proofs[index]!]));
    },
    async follow(claims) {
      const own = new Set(run.tasks.map((record) => record.taskId));
      const others = claims.filter((claim) => !own.has(claim.taskId));
      if (others.length === 0 || !patched(FOLLOW_TASKS_PATCH)) return;
      const vouched = await reachable(others);
      const candidates = others.filter((claim) => vouched.has(claim.taskId));
      if (candidates.length === 0) return;
      const reports = await inspectTasks({ runIds: candidates.map((claim) => claim.runId) });
      for (const claim of candidates) {
        if (reports.find((report) => report.runId === claim.runId)?.status !== 'pending') continue;
        run.children += 1;
        const key = `${claim.agent}-${run.children}`;
        expectReports(run, key, { runId: claim.runId });
        // A task that has ended meanwhile cannot be told; there is nothing left to follow then.
        await getExternalWorkflowHandle(claim.runId)
          .signal(reportHoldsToSignal, { runId: run.runId, key })
          .catch(() => undefined);
      }
    },
    reachable,
  };
}

/**
 * What a run learns of its tasks: one it asked to stop that is still running reads
 * `aborting`; a finished one's usage counts in this run's, once (a background task spends
 * against the run that launched it, as far as the run sees it finish).
 */
function learnOf(run: RunState, reports: TaskReport[], forgetChild: (runId: string) => void): TaskReport[] {
  for (const report of reports) {
    if (isSettled(report.status)) forgetChild(report.runId);
    if (report.status !== 'completed' || !report.result || run.countedTasks.includes(report.runId)) continue;
    run.countedTasks = [...run.countedTasks, report.runId];
    run.status.usage = addUsage(run.status.usage, report.result.usage);
  }
  return reports.map((report) => (report.status === 'pending' && run.aborting.includes(report.runId) ? { ...report, status: 'aborting' } : report));
}

/**
 * Turns of server-managed sub-agents' sessions, sent through the `invokeSession` activity
 * (update-with-start with an update id from this run, so a retry attaches to the same turn).
 * A detached turn is recorded as a background task; a finished one's usage counts here.
 */
export function sessionInvoker({
  run,
  inherited,
  forgetChild,
}: SubAgentRunnerOptions): (options: SessionTurnOptions & { name?: string }) => Promise<{ output: InvokeOutput } | { error: KeelError }> {
  return async ({ agent, messages, sessionId, fromRunId, detach = false, name }) => {
    run.children += 1;
    const session = sessionId ?? `${run.runId}/${agent}-${run.children}`;
    const { invokeSession } = proxyActivities<KeelActivities>({
      // A detached turn may queue behind a busy session before it is admitted.
      startToCloseTimeout: detach ? '30 minutes' : '3650 days',
      heartbeatTimeout: '10 seconds',
      retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
      summary: `session turn of ${agent}`,
    });
    // The turn's run id is known once the session started it: any turn of that session may report under this key.
    expectReports(run, `${agent}-${run.children}`, { sessionWorkflowId: sessionWorkflowId(agent, session) });
    try {
      const requestId = `${run.runId}/turn-${run.children}`;
      const invoke = {
        messages,
        detach,
        requestId,
        use: inherited(),
        reportTo: { runId: run.runId, key: `${agent}-${run.children}` },
        ...(fromRunId ? { fromRunId } : {}),
      };
      const output = await invokeSession({ agent, sessionId: session, invoke, updateId: requestId });
      if (detach) run.tasks = [...run.tasks, { taskId: taskIdOf(agent, output.runId), agent, runId: output.runId, ...(name !== undefined ? { name } : {}) }];
      else {
        // Counted now: a later check of this task id must not count it again.
        run.status.usage = addUsage(run.status.usage, output.usage);
        run.countedTasks = [...run.countedTasks, output.runId];
        forgetChild(output.runId);
      }
      return { output };
    } catch (error) {
      if (runCancelled(error)) {
        // The turn runs in the sub-agent's session, not under this run: stop it explicitly.
        await CancellationScope.nonCancellable(() =>
          getExternalWorkflowHandle(sessionWorkflowId(agent, session))
            .signal(abortTurnSignal, { requestedBy: run.runId })
            .catch(() => undefined),
        );
        throw error;
      }
      return { error: asKeelError(error, `the session of agent "${agent}"`) };
    }
  };
}
