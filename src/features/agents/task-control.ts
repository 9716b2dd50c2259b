/**
 * A run's background tasks (the `TaskControl` the Agents middleware is lent as its part's `tasks`): sub-agent
 * runs started with parent-close policy ABANDON, so they go on when this run finishes, recorded
 * in the run's `tasks` and asked about through activities (a task may have been started by an earlier
 * run of the conversation). The shapes are in core/tasks.ts; the Agents middleware's tools on
 * top of this are in background-tasks.ts. Runs in the workflow: no I/O.
 */
import { childSummary } from '../../engine/child-summary';
import { getExternalWorkflowHandle, ParentClosePolicy, startChild } from '@temporalio/workflow';
import { featureActivityCaller } from '../../engine/feature-activity';
import { inheritedMemo } from '../../engine/versioning';
import { isSettled, taskRecord, type TaskReport } from '../../core/tasks';
import { awaitTasksDoor, inspectTasksDoor, type TaskControl } from './run-part';
import { GENERATE_WORKFLOW, reportHoldsToSignal } from '../../core/protocol';
import { sign, verify } from '../../engine/proofs';
import { childRun, type AgentsRun } from './run-agent';

/** Calls the task doors (each with options of its own: no agent spec needed). */
const callActivity = featureActivityCaller();
const inspectTasks = (input: { runIds: string[] }) => callActivity(inspectTasksDoor, input);

/** How long a wait may take past its own deadline before its activity is given up. */
const WAIT_MARGIN_MS = 60_000;

/** The task ids of `claims` the run may read: its own, and those whose proof verified (each (id, proof) checked once per run). */
function reachableTasks(state: AgentsRun['state']): TaskControl['reachable'] {
  return async (claims) => {
    const own = new Set(state.tasks.map((record) => record.taskId));
    // A proof does not stop being valid: its answer is kept.
    const checkKey = (claim: { taskId: string; proof?: string }) => `${claim.taskId} ${claim.proof ?? ''}`;
    const unchecked = claims.filter(
      (claim): claim is { taskId: string; proof: string } =>
        !own.has(claim.taskId) && typeof claim.proof === 'string' && state.vouchedTasks[checkKey(claim)] === undefined,
    );
    const answers = await verify(unchecked.map((claim) => ({ subject: { kind: 'task' as const, taskId: claim.taskId }, proof: claim.proof })));
    state.vouchedTasks = { ...state.vouchedTasks, ...Object.fromEntries(unchecked.map((claim, index) => [checkKey(claim), answers[index] === true])) };
    return new Set([...own, ...claims.filter((claim) => state.vouchedTasks[checkKey(claim)] === true).map((claim) => claim.taskId)]);
  };
}

/** The background tasks of `run`: started as child runs that outlive it, read through activities. */
export function taskControl(run: AgentsRun): TaskControl {
  const { state, spec } = run;
  const reachable = reachableTasks(state);
  return {
    async start(options) {
      const { runId, input } = childRun(run, options);
      await startChild(GENERATE_WORKFLOW, {
        workflowId: runId,
        args: [input],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        // Background work goes after what a person waits on; its tenant (fairness key and weight) it inherits.
        ...(spec()?.backgroundPriority !== undefined ? { priority: { priorityKey: spec()!.backgroundPriority } } : {}),
        ...childSummary(options.agent, options.messages),
        ...inheritedMemo(),
      });
      const record = taskRecord({ agent: options.agent, runId, name: options.name });
      state.tasks = [...state.tasks, record];
      return record;
    },
    records: () => state.tasks,
    async inspect(runIds) {
      return learnOf(run, await inspectTasks({ runIds: [...runIds] }));
    },
    async wait(runIds, { timeoutMs, first }) {
      const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
      const { reports, timedOut } = await callActivity(
        awaitTasksDoor,
        { runIds: [...runIds], first, ...(deadline !== undefined ? { deadline } : {}) },
        {
          startToCloseTimeout: timeoutMs === undefined ? '3650 days' : timeoutMs + WAIT_MARGIN_MS,
          heartbeatTimeout: '10 seconds',
          retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
        },
      );
      return { reports: learnOf(run, reports), timedOut };
    },
    async abort(runId) {
      // A run that already ended cannot be cancelled; asking is then a no-op.
      await getExternalWorkflowHandle(runId)
        .cancel()
        .catch(() => undefined);
      if (!state.aborting.includes(runId)) state.aborting = [...state.aborting, runId];
    },
    async prove(taskIds) {
      if (taskIds.length === 0) return {};
      const proofs = await sign(taskIds.map((taskId) => ({ kind: 'task' as const, taskId })));
      return Object.fromEntries(taskIds.map((taskId, index) => [taskId, proofs[index]!]));
    },
    async follow(claims) {
      const own = new Set(state.tasks.map((record) => record.taskId));
      const others = claims.filter((claim) => !own.has(claim.taskId));
      if (others.length === 0) return;
      const vouched = await reachable(others);
      const candidates = others.filter((claim) => vouched.has(claim.taskId));
      if (candidates.length === 0) return;
      const reports = await inspectTasks({ runIds: candidates.map((claim) => claim.runId) });
      for (const claim of candidates) {
        if (reports.find((report) => report.runId === claim.runId)?.status !== 'pending') continue;
        state.children += 1;
        const key = `${claim.agent}-${state.children}`;
        run.expectReports(key, { runId: claim.runId });
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
function learnOf({ state, forgetChild, addUsage }: AgentsRun, reports: TaskReport[]): TaskReport[] {
  for (const report of reports) {
    if (isSettled(report.status)) forgetChild(report.runId);
    if (report.status !== 'completed' || !report.result || state.countedTasks.includes(report.runId)) continue;
    state.countedTasks = [...state.countedTasks, report.runId];
    addUsage(report.result.usage, `the usage background task ${report.runId} reported`);
  }
  return reports.map((report) => (report.status === 'pending' && state.aborting.includes(report.runId) ? { ...report, status: 'aborting' } : report));
}
