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
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import { inheritedMemo } from '../../workflows/versioning';
import { principalField, principalOfMemo } from '../../core/principal';
import { KeelError, fromApplicationFailure, toKeelError } from '../../core/errors';
import { addUsage, type Usage } from '../../core/usage';
import type { MiddlewareRef, RunInputOptions, RunResult } from '../../core/run';
import { taskRecord } from '../../core/tasks';
import type { AgentRunOptions, AgentRunOutcome, AgentsActivities, SessionRunOptions } from './capabilities';
import { sessionWorkflowId, type InvokeOutput } from '../../core/session';
import { asKeelError } from '../../workflows/activity-errors';
import { childSummary } from '../../workflows/child-summary';
import { GENERATE_WORKFLOW, abortRunSignal } from '../../core/protocol';
import type { RunState } from '../../workflows/run-state';
import { expectReports } from '../../workflows/reporters';
import type { RunServices } from '../feature';

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

/** The id and input of the next sub-agent run of `run` (numbered by `run.children`). */
export function childRun(
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

/**
 * True when the run itself is being cancelled (not only a child of it): then the cancellation
 * ends the run; a child cancelled on its own is that child's failure.
 */
function runCancelled(error: unknown): boolean {
  return isCancellation(error) && CancellationScope.current().consideredCancelled;
}

/** Runs sub-agents of `run` as child workflows, each with the middleware `inherited()` hands down. */
export function agentRunner({ run, inherited, forgetChild }: RunServices): (options: AgentRunOptions) => Promise<AgentRunOutcome> {
  return async (options) => {
    const { agent } = options;
    const { runId, input } = childRun(run, inherited, options);
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
      if (usage) run.status.usage = addUsage(run.status.usage, usage, `the usage of sub-agent run "${runId}"`);
      return { runId, error: failure };
    }
    // Outside the try: a sum keel cannot count fails this run, it is not the child's failure.
    run.status.usage = addUsage(run.status.usage, result.usage, `the usage of sub-agent run "${runId}"`);
    forgetChild(runId);
    return { runId, result };
  };
}

/**
 * Runs of server-managed sub-agents' sessions, sent through the `invokeSession` activity
 * (update-with-start with an update id from this run, so a retry attaches to the same run).
 * A detached one is recorded as a background task; a finished one's usage counts here.
 */
export function sessionInvoker({
  run,
  inherited,
  forgetChild,
}: RunServices): (options: SessionRunOptions & { name?: string }) => Promise<{ output: InvokeOutput } | { error: KeelError }> {
  return async ({ agent, messages, sessionId, fromRunId, detach = false, name }) => {
    run.children += 1;
    const session = sessionId ?? `${run.runId}/${agent}-${run.children}`;
    const { invokeSession } = proxyActivities<AgentsActivities>({
      // A detached one may queue behind a busy session before it is admitted.
      startToCloseTimeout: detach ? '30 minutes' : '3650 days',
      heartbeatTimeout: '10 seconds',
      retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
      summary: `session run of ${agent}`,
    });
    // The run's id is known once the session started it: any run of that session may report under this key.
    expectReports(run, `${agent}-${run.children}`, { sessionWorkflowId: sessionWorkflowId(agent, session) });
    try {
      const requestId = `${run.runId}/session-run-${run.children}`;
      const invoke = {
        messages,
        detach,
        requestId,
        use: inherited(),
        reportTo: { runId: run.runId, key: `${agent}-${run.children}` },
        ...(fromRunId ? { fromRunId } : {}),
      };
      const output = await invokeSession({
        agent,
        sessionId: session,
        invoke,
        updateId: requestId,
        ...principalField(principalOfMemo(workflowInfo().memo)),
      });
      if (detach) run.tasks = [...run.tasks, taskRecord({ agent, runId: output.runId, name })];
      else {
        // Counted now: a later check of this task id must not count it again.
        run.status.usage = addUsage(run.status.usage, output.usage);
        run.countedTasks = [...run.countedTasks, output.runId];
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
