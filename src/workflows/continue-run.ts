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
import type { Usage } from '../core/usage';
import { carryKey, type MiddlewareStage } from '../middleware/stages';
import { restoreSlots, type Feature } from '../features/feature';
import type { RunState } from './run-state';

/** The loop's fields of the state a run carries (the features' are in their slots): no other key of a carried state is read. */
const CARRIED_FIELDS = ['status', 'artifacts', 'modelCalls', 'reporters', 'followers', 'steerIds', 'turns', 'published'] as const;

/** Fields a run carried before they were grouped (into `turns` and `published`): read from a chain an older worker continued. */
type LegacyFields = { turnBase?: number; turnUsage?: Usage[]; memoHolds?: string; indexed?: { state: string } };

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
 * Puts a carried state back into a fresh run's state (the same object: the queries read it),
 * each feature's slot into its own (the same objects: each feature's part holds its own).
 * Only a run that Temporal started by continuing another as new takes one: a run a client
 * started (the `temporal` CLI, a raw gRPC call) cannot hand itself decisions, vouched-for tasks
 * or spent budget, and fails INVALID_ARGUMENT before anything runs.
 */
export function restoreRunState(run: RunState, state: Record<string, unknown>, features: readonly Feature[]): void {
  if (!workflowInfo().continuedFromExecutionRunId) {
    throw new KeelError(
      'INVALID_ARGUMENT',
      '`continued` is what keel hands the next run of a chain when a run continues as new; a run a client starts cannot carry it',
    );
  }
  const restored = run as unknown as Record<string, unknown>;
  for (const field of CARRIED_FIELDS) if (state[field] !== undefined) restored[field] = state[field];
  const legacy = state as LegacyFields;
  if (legacy.turnBase !== undefined) run.turns = { base: legacy.turnBase, usage: legacy.turnUsage ?? [] };
  if (legacy.memoHolds !== undefined) run.published.holds = legacy.memoHolds;
  if (legacy.indexed) run.published.state = legacy.indexed.state;
  restoreSlots(features, run.features, state);
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
