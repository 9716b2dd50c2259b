/**
 * Continue-as-new for long runs: at a turn boundary whose history has passed its bounds (or
 * when Temporal suggests it), a run hands the conversation, its state and what each
 * middleware carries to a fresh run of the same workflow id, so history stays small and
 * nothing re-runs; clients keep using the one run id (the workflow id). Runs in the
 * workflow: deterministic, no I/O.
 */
import { workflowInfo } from '@temporalio/workflow';
import { KeelError } from '../core/errors';
import type { Message } from '../core/messages';
import type { RunInput } from '../core/run';
import { carryKey, type MiddlewareStage } from '../middleware/stages';
import type { RunState } from './run-state';

/** True when the run's history has passed either bound, or the server suggests continuing as new. */
export function shouldContinueAsNew(bounds: RunInput['continueAsNewAt']): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || info.historySize > bounds.historyBytes || info.historyLength > bounds.historyEvents;
}

/** The state a run carries into the next one (everything but the requests in flight, of which there are none at a boundary). */
function carriedState(run: RunState): Record<string, unknown> {
  const { runId: _runId, modelRequests: _requests, messages: _messages, ...state } = run;
  return state;
}

/**
 * Puts a carried state back into a fresh run's state (the same object: the queries read it).
 * Only a run that Temporal started by continuing another as new takes one: a run a client
 * started (the `temporal` CLI, a raw gRPC call) cannot hand itself decisions, vouched-for tasks
 * or spent budget, and fails INVALID_ARGUMENT before anything runs.
 */
export function restoreRunState(run: RunState, state: Record<string, unknown>): void {
  if (!workflowInfo().continuedFromExecutionRunId) {
    throw new KeelError(
      'INVALID_ARGUMENT',
      '`continued` is what keel hands the next run of a chain when a run continues as new; a run a client starts cannot carry it',
    );
  }
  Object.assign(run, state, { modelRequests: {} });
}

/** The input of the next run of the chain, going on at `iteration` with `messages`. */
export function continuedInput(
  input: RunInput,
  run: RunState,
  { iteration, messages, stages }: { iteration: number; messages: Message[]; stages: readonly MiddlewareStage[] },
): RunInput {
  const middleware: Record<string, unknown> = {};
  for (const stage of stages) {
    const carried = stage.hooks.carry?.();
    if (carried !== undefined) middleware[carryKey(stage.index, stage.name)] = carried;
  }
  // What only the first run uses (a resume, a client's state, starting artifacts) is in the state and messages now.
  const { resume: _resume, state: _state, artifacts: _artifacts, ...rest } = input;
  return { ...rest, artifacts: [], messages, continued: { iteration, state: carriedState(run), middleware, runs: (input.continued?.runs ?? 0) + 1 } };
}
