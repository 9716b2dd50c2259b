/**
 * Workflow logs name the run's agent and turn, besides the ids Temporal adds: a workflow
 * interceptor module (bundled with every keel workflow) adds them from the run the workflow
 * registered. Each workflow has its own copy of this module's state. Workflow code:
 * deterministic, no I/O.
 */
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';
import type { RunState } from './run-state';

let current: RunState | undefined;

/** The run whose agent and turn this workflow's logs carry. */
export function logRunAttributes(run: RunState): void {
  current = run;
}

export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [
    {
      getLogAttributes: (input, next) => next(current ? { ...input, agent: current.status.agent, turn: current.status.turn } : input),
    },
  ],
});
