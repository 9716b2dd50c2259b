/**
 * Sub-agent runs: a middleware (Agents) runs another agent as a child generate workflow,
 * whose id extends the parent's (`<runId>/<agent>-<n>`), so the tree of runs is visible in
 * Temporal. The child gets the middleware the parent's hand down (`forChildRuns`), and its
 * usage counts in the parent's. Runs in the workflow: no I/O.
 */
import { ChildWorkflowFailure, ApplicationFailure, executeChild, isCancellation } from '@temporalio/workflow';
import { KeelError, fromApplicationFailure, toKeelError } from '../core/errors';
import { addUsage, type Usage } from '../core/messages';
import type { MiddlewareRef, RunInputOptions, RunResult } from '../core/run';
import type { AgentRunOptions, AgentRunOutcome } from '../middleware/types';
import { GENERATE_WORKFLOW } from './definitions';
import type { RunState } from './run-state';

/** The KeelError a failed child run ended with (its status kept), and the usage it reported. */
function childFailure(error: unknown, agent: string): { error: KeelError; usage?: Usage } {
  const cause = error instanceof ChildWorkflowFailure ? error.cause : error;
  if (cause instanceof ApplicationFailure) {
    const failure = fromApplicationFailure(cause);
    const partial = failure.details.partial as { usage?: Usage } | undefined;
    return { error: failure, ...(partial?.usage ? { usage: partial.usage } : {}) };
  }
  const failure = toKeelError(cause ?? error);
  return { error: new KeelError(failure.status, `agent "${agent}": ${failure.message}`, failure.details, failure.classified) };
}

/** Runs sub-agents of `run` as child workflows, each with the middleware `inherited()` hands down. */
export function agentRunner(run: RunState, inherited: () => MiddlewareRef[]): (options: AgentRunOptions) => Promise<AgentRunOutcome> {
  return async ({ agent, messages, artifacts = [] }) => {
    run.children += 1;
    const runId = `${run.runId}/${agent}-${run.children}`;
    const input: RunInputOptions = { agent, messages, artifacts, use: inherited() };
    try {
      const result: RunResult = await executeChild(GENERATE_WORKFLOW, { workflowId: runId, args: [input] });
      run.status.usage = addUsage(run.status.usage, result.usage);
      return { runId, result };
    } catch (error) {
      if (isCancellation(error)) throw error;
      const { error: failure, usage } = childFailure(error, agent);
      if (usage) run.status.usage = addUsage(run.status.usage, usage);
      return { runId, error: failure };
    }
  };
}
