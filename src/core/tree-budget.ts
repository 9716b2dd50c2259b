/**
 * One budget for a tree of runs: the run where a Budget is set keeps a ledger of what the tree
 * spent (its own model calls and what every run below it tells it after each of theirs); the
 * runs below ask it before each model call. Shapes shared by the workflow and the activity. Pure.
 */
/** Where a handed-down Budget keeps its count: the ledger run and the Budget stage in it. */
export interface LedgerRef {
  runId: string;
  stage: number;
}

/** What `the tree budget query` answers. */
export interface TreeBudgetAnswer {
  /** Spent by each Budget stage that keeps a ledger, by its stage index. */
  budgets: Record<string, Record<string, number>>;
}

/** Input of `readTreeBudget`. */
export interface ReadTreeBudgetInput {
  /** The run that keeps the ledger. */
  runId: string;
}

/** What `readTreeBudget` returns: the ledger's answer, or `gone` when the run no longer exists. */
export type ReadTreeBudgetResult = TreeBudgetAnswer & { gone?: true };
