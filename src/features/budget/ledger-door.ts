/**
 * Budget's two doors to its tree's ledger: what a Budget gets of its run's ledger (`TreeLedger`,
 * lent by its run, built from tree-ledger.ts), and Budget's one
 * activity, `readTreeBudget`, which asks the run that keeps the tree's ledger what each of its
 * budgets has spent, for a run below it about to call its model. Pure: the declarations the
 * workflow holds (the activity's Node half is activities/tree-budget.ts).
 */
import { z } from 'zod';
import type { Usage } from '../../core/usage';
import type { SpendLedgers } from './spend-door';
import { defineActivity } from '../../middleware/activity-door';

/**
 * The budget ledger of the run's tree (Budget uses it): a run with a Budget keeps one, counting
 * its own model calls and those the runs below it tell it of; a run below asks it before each
 * model call. Runs in the workflow.
 */
export interface TreeLedger {
  /** This run's id: the ledger the runs it starts count against. */
  readonly runId: string;
  /** What this run's ledger has counted: its own model calls and those the runs below it told it of. */
  usage(): Usage;
  /** True once a run below this one told its ledger of a model call. */
  toldFromBelow(): boolean;
  /** Keeps a ledger for the Budget at `stage`: the runs below ask it what `spent()` returns. */
  serve(stage: number, spent: () => Record<string, number>): void;
  /** Tells ledger `ledgerRunId` of every model call of this run from now on (right after each). */
  join(ledgerRunId: string): void;
  /**
   * What Budget `stage` of ledger `ledgerRunId` has spent (this run's calls told first), and what
   * this run could not tell it (it had ended); undefined when it cannot answer (it is gone).
   */
  ask(ledgerRunId: string, stage: number): Promise<{ spent: Record<string, number>; untold: Usage } | undefined>;
}

/** What a run lends its Budget middleware (each built the first time it is used). Outside a run (the middleware harness) there is none: a Budget counts only its own run. */
export interface BudgetPart {
  /** The run's side of its tree's ledger. */
  readonly tree: TreeLedger;
  /** The run's side of its tenant's and owner's spend ledgers. */
  readonly spend: SpendLedgers;
}

/** What `readTreeBudget` returns: the ledger's answer (spent by each ledger-keeping Budget stage), or `gone` when the run no longer exists. */
export const ReadTreeBudgetResultSchema = z.object({
  budgets: z.record(z.string(), z.record(z.string(), z.number())),
  gone: z.literal(true).optional(),
});
export type ReadTreeBudgetResult = z.infer<typeof ReadTreeBudgetResultSchema>;

/** `readTreeBudget`: the run that keeps the ledger, by run id. */
export const readTreeBudgetDoor = defineActivity({
  name: 'readTreeBudget',
  input: z.object({ runId: z.string().min(1) }),
  output: ReadTreeBudgetResultSchema,
  describe: () => 'ask the tree budget',
  // The ledger's worker may be restarting: keep asking (a read) rather than fail the model call.
  options: {
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
    scheduleToCloseTimeout: '10 minutes',
  },
});
