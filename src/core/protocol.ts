/**
 * Names of the messages `generateWorkflow` answers, as typed constants: clients, the CLI
 * and tests import these, never retype a string. Pure: safe on both sides.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Decision, DecisionAccepted } from './holds';
import type { ForkPoint } from './fork';
import type { Message } from './messages';
import type { Usage } from './usage';
import type { SteerInput, SteerRecord } from './steering';
import type { ChildHolds, ReportTarget, RunStatus } from './run';
import type { InvokeInput, InvokeOutput, Snapshot } from './session';
import type { TreeBudgetAnswer } from './tree-budget';

/** Current state of a run: lifecycle, turn, usage, pending holds. Works on closed runs. */
export const statusQuery = defineQuery<RunStatus>('status');

/** The run's messages from index `from` on (for progress display). */
export const messagesQuery = defineQuery<Message[], [number]>('messages');

/**
 * The run's turns, and what its conversation had spent by the end of turn `turn`; with
 * `conversation`, also the conversation a fork at that turn keeps (refused, naming the turns
 * there are, for a turn past the end). docs/fork.md.
 */
export const forkPointQuery = defineQuery<ForkPoint, [number, boolean?]>('forkPoint');

/**
 * One page of the JSON text of a model request an in-flight `callModel` activity must send,
 * by key and page index. The activity reads it back from the run so history records the
 * conversation once; pages keep each answer far under the server's payload
 * limit, and under External Storage's threshold, so a request of any size is read without
 * storing it anywhere.
 */
export const modelRequestQuery = defineQuery<ModelRequestPage, [string, number]>('__keel_internal_modelRequest');

/** A page of a model request's JSON text, and how many pages it has. */
export interface ModelRequestPage {
  pages: number;
  text: string;
  /** On page 0: each page's id; a page with an id seen before has the same text. */
  ids?: string[];
}

/** Characters of one page of a model request (at most ~384 KiB of UTF-8, usually 128 KiB). */
export const MODEL_REQUEST_PAGE_CHARS = 128 * 1024;

/**
 * A decision on a pending hold. Its validator rejects an unknown or already-decided
 * id, or a malformed decision, with a message that says which; nothing is recorded then.
 */
export const resumeUpdate = defineUpdate<DecisionAccepted, [Decision]>('resume');

/**
 * A user message for the run under way, taken at its next model call (docs/steering.md); with
 * `interrupt`, the model call in flight is cancelled and made again with it. Idempotent by update
 * id. Its validator refuses an empty text and a run that has finished its loop.
 */
export const steerUpdate = defineUpdate<SteerRecord, [SteerInput]>('steer');

/** The same decision, fire-and-forget. An invalid one is logged and ignored. */
export const resumeSignal = defineSignal<[Decision]>('resume');

/**
 * Internal: a sub-agent run reports its pending holds (its own and its descendants') to
 * its parent, which shows them in its status and forwards decisions for them.
 */
export const childHoldsSignal = defineSignal<[ChildHolds]>('childInterrupts');

/**
 * Internal: a later run of the same conversation follows this run (a background task whose
 * launching run has ended): from now on this run reports its pending holds there too, under the
 * key given, and that run forwards decisions for them here.
 */
export const reportHoldsToSignal = defineSignal<[ReportTarget]>('reportHoldsTo');

/** Workflow type name of a generate run. */
export const GENERATE_WORKFLOW = 'generateWorkflow';

/** Workflow type name of a session (a server-managed agent's conversation). */
export const SESSION_WORKFLOW = 'sessionWorkflow';

/**
 * One message to a session: runs it as a child generate run and answers when it settles (or
 * at once, with a pending snapshot, when `detach` is set). Its validator refuses client
 * state and unknown snapshot ids.
 */
export const invokeUpdate = defineUpdate<InvokeOutput, [InvokeInput]>('invoke');

/** A snapshot of the session, by id, or the latest when no id is given; null when there is none. */
export const snapshotQuery = defineQuery<Snapshot | null, [string?]>('snapshot');

/** The snapshot of the session's run in flight (waited for or detached), or null when none runs: its `runId` is the run a steer goes to. */
export const currentRunQuery = defineQuery<Snapshot | null>('currentRun');

/** Blocks until the snapshot settles (completed, failed or aborted), then answers it. */
export const waitForSnapshotUpdate = defineUpdate<Snapshot, [string]>('waitForSnapshot');

/** Stops the session's run in flight, if any: its snapshot reads `aborting`, then settles as `aborted`. */
export const abortSessionUpdate = defineUpdate<Snapshot | null>('abort');

/** Internal: stops the session's run in flight when run `requestedBy` sent it (that delegating run was cancelled). */
export const abortRunSignal = defineSignal<[{ requestedBy: string }]>('abortRun');

/**
 * Internal: what each Budget of this run (the ledger of its tree) has spent, by stage index,
 * flattened (`custom.<key>` for custom counters). Sub-agent runs below it ask before each model
 * call (through the `readTreeBudget` activity). Works on closed runs.
 */
export const treeBudgetQuery = defineQuery<TreeBudgetAnswer>('__keel_internal_treeBudget');

/**
 * Internal: a run of the tree tells the run that keeps its budget ledger what one of its model
 * calls spent. Any run may send it; it can only make the budget stricter.
 */
export const treeUsageSignal = defineSignal<[{ from: string; usage: Usage }]>('__keel_internal_treeUsage');
