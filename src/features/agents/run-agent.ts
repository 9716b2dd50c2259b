/**
 * Sub-agent runs: a middleware (Agents) runs another agent as a child generate workflow,
 * whose id extends the parent's (`<runId>/<agent>-<n>`), so the tree of runs is visible in
 * Temporal. The child gets the middleware the parent's hand down (`forChildRuns`), and its
 * usage counts in the parent's. A background one is a task (task-control.ts). Runs in the workflow:
 * no I/O.
 */
import {
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowFailure,
  executeChild,
  getExternalWorkflowHandle,
  isCancellation,
  workflowInfo,
} from '@temporalio/workflow';
import { z } from 'zod';
import { inheritedMemo } from '../../engine/versioning';
import { principalField, principalOfMemo } from '../../core/principal';
import { KeelError, fromApplicationFailure, toKeelError } from '../../core/errors';
import type { Usage } from '../../core/usage';
import type { RunInputOptions, RunResult } from '../../core/run';
import { TaskRecordSchema, taskRecord } from '../../core/tasks';
import { invokeSessionDoor, type AgentRunOptions, type AgentRunOutcome, type SessionRunOptions } from './run-part';
import { featureActivityCaller } from '../../engine/feature-activity';
import { sessionWorkflowId, type InvokeOutput } from '../../core/session';
import { asKeelError } from '../../engine/activity-errors';
import { childSummary } from '../../engine/child-summary';
import { GENERATE_WORKFLOW, abortRunSignal } from '../../core/protocol';
import type { RunServices } from '../feature';

/** Agents' slot of its run's state: the runs it started, and what it learnt of its tasks. */
export const AgentsStateSchema = z.object({
  /** Sub-agent runs started so far (numbers their run ids). */
  children: z.number().int().nonnegative().default(0),
  /** Background tasks this run started. */
  tasks: z.array(TaskRecordSchema).default([]),
  /** Run ids of tasks this run asked to stop that had not settled then. */
  aborting: z.array(z.string()).default([]),
  /** Run ids of finished tasks whose usage this run has counted. */
  countedTasks: z.array(z.string()).default([]),
  /** Task ids claimed by the conversation (not started by this chain) whose proof was checked, by `<taskId> <proof>`, and whether it verified. */
  vouchedTasks: z.record(z.string(), z.boolean()).default({}),
});
export type AgentsState = z.infer<typeof AgentsStateSchema>;

/** What Agents' runs are lent of the run that starts them. */
export type AgentsRun = RunServices<AgentsState>;

/** Calls the session door (with options of each call's own). */
const callActivity = featureActivityCaller();

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

/** The id and input of the next sub-agent run of `run` (numbered by its `children`). */
export function childRun(
  run: Pick<AgentsRun, 'runId' | 'state' | 'expectReports' | 'inherited'>,
  { agent, messages, artifacts = [] }: AgentRunOptions,
): { runId: string; input: RunInputOptions } {
  run.state.children += 1;
  const key = `${agent}-${run.state.children}`;
  const runId = `${run.runId}/${key}`;
  run.expectReports(key, { runId });
  return { runId, input: { agent, messages, artifacts, use: run.inherited() } };
}

/**
 * True when the run itself is being cancelled (not only a child of it): then the cancellation
 * ends the run; a child cancelled on its own is that child's failure.
 */
function runCancelled(error: unknown): boolean {
  return isCancellation(error) && CancellationScope.current().consideredCancelled;
}

/** Runs sub-agents of `run` as child workflows, each with the middleware `inherited()` hands down. */
export function agentRunner(run: AgentsRun): (options: AgentRunOptions) => Promise<AgentRunOutcome> {
  const { forgetChild } = run;
  return async (options) => {
    const { agent } = options;
    const { runId, input } = childRun(run, options);
    let result: RunResult;
    try {
      result = await executeChild<(input: RunInputOptions) => Promise<RunResult>>(GENERATE_WORKFLOW, {
        workflowId: runId,
        args: [input],
        ...childSummary(agent, options.messages),
        ...inheritedMemo(),
      });
    } catch (error) {
      if (runCancelled(error)) throw error;
      forgetChild(runId);
      const { error: failure, usage } = childFailure(error, agent);
      if (usage) run.addUsage(usage, `the usage of sub-agent run "${runId}"`);
      return { runId, error: failure };
    }
    // Outside the try: a sum keel cannot count fails this run, it is not the child's failure.
    run.addUsage(result.usage, `the usage of sub-agent run "${runId}"`);
    forgetChild(runId);
    return { runId, result };
  };
}

/**
 * Runs of server-managed sub-agents' sessions, sent through the `invokeSession` activity
 * (update-with-start with an update id from this run, so a retry attaches to the same run).
 * A detached one is recorded as a background task; a finished one's usage counts here.
 */
export function sessionInvoker(run: AgentsRun): (options: SessionRunOptions & { name?: string }) => Promise<{ output: InvokeOutput } | { error: KeelError }> {
  const { state, inherited, forgetChild } = run;
  return async ({ agent, messages, sessionId, fromRunId, detach = false, name }) => {
    state.children += 1;
    const session = sessionId ?? `${run.runId}/${agent}-${state.children}`;
    const invokeSession = (input: z.input<typeof invokeSessionDoor.input>) =>
      callActivity(invokeSessionDoor, input, {
        // A detached one may queue behind a busy session before it is admitted.
        startToCloseTimeout: detach ? '30 minutes' : '3650 days',
        heartbeatTimeout: '10 seconds',
        retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
      });
    // The run's id is known once the session started it: any run of that session may report under this key.
    run.expectReports(`${agent}-${state.children}`, { sessionWorkflowId: sessionWorkflowId(agent, session) });
    try {
      const requestId = `${run.runId}/session-run-${state.children}`;
      const invoke = {
        messages,
        detach,
        requestId,
        use: inherited(),
        reportTo: { runId: run.runId, key: `${agent}-${state.children}` },
        ...(fromRunId ? { fromRunId } : {}),
      };
      const output = await invokeSession({
        agent,
        sessionId: session,
        invoke,
        updateId: requestId,
        ...principalField(principalOfMemo(workflowInfo().memo)),
      });
      if (detach) state.tasks = [...state.tasks, taskRecord({ agent, runId: output.runId, name })];
      else {
        // Counted now: a later check of this task id must not count it again.
        run.addUsage(output.usage);
        state.countedTasks = [...state.countedTasks, output.runId];
        forgetChild(output.runId);
      }
      return { output };
    } catch (error) {
      if (runCancelled(error)) {
        // The run belongs to the sub-agent's session, not under this run: stop it explicitly.
        await CancellationScope.nonCancellable(() =>
          getExternalWorkflowHandle(sessionWorkflowId(agent, session))
            .signal(abortRunSignal, { requestedBy: run.runId })
            .catch(() => undefined),
        );
        throw error;
      }
      return { error: asKeelError(error, `the session of agent "${agent}"`) };
    }
  };
}
