/**
 * Workflow logs name the run's agent and turn, besides the ids Temporal adds: a workflow
 * interceptor module (bundled with every keel workflow) adds them from the run the workflow
 * registered. A workflow thread loads this module once for all its runs, so the run is kept in
 * a holder the interceptor factory makes for each run, which the workflow finds through the
 * SDK's workflow AsyncLocalStorage (the execute interceptor runs the workflow inside it).
 * Workflow code: deterministic, no I/O.
 */
import { AsyncLocalStorage, type WorkflowInterceptorsFactory } from '@temporalio/workflow';
import type { RunState } from './run-state';

/** One run's holder: the run its logs are about, once the workflow has one. */
interface LoggedRun {
  run?: RunState;
}

/** The holder of the run whose code is executing; one storage for the thread, one holder per run. */
const loggedRun = new AsyncLocalStorage<LoggedRun>();

/** The run whose agent and turn this workflow's logs carry (a no-op in a bundle without the interceptor). */
export function logRunAttributes(run: RunState): void {
  const holder = loggedRun.getStore();
  if (holder) holder.run = run;
}

export const interceptors: WorkflowInterceptorsFactory = () => {
  const holder: LoggedRun = {};
  return {
    inbound: [{ execute: (input, next) => loggedRun.run(holder, () => next(input)) }],
    outbound: [
      {
        getLogAttributes: (input, next) => {
          const { run } = holder;
          return next(run ? { ...input, agent: run.status.agent, turn: run.status.turn } : input);
        },
      },
    ],
  };
};
