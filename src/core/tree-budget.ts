/**
 * One budget for a tree of runs: what the run that keeps a tree's budget ledger answers when
 * asked (the tree budget query of the wire protocol). Pure.
 */
/** What `the tree budget query` answers. */
export interface TreeBudgetAnswer {
  /** Spent by each Budget stage that keeps a ledger, by its stage index. */
  budgets: Record<string, Record<string, number>>;
}
