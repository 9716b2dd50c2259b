/**
 * The `readTreeBudget` activity: asks the run that keeps a tree's budget ledger what each of
 * its budgets has spent (the `treeBudgetQuery`), for a sub-agent run below it about to call its
 * model. Works on a ledger run that has ended (Temporal answers queries of closed runs). Node side.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { ReadTreeBudgetInput, ReadTreeBudgetResult } from '../core/tree-budget';
import { treeBudgetQuery } from '../core/protocol';
import { InfrastructureError } from './infrastructure-error';

/** What the ledger run answers; `{ gone: true }` when no such run exists any more (its history was deleted). */
export async function readTreeBudget(client: Client, { runId }: ReadTreeBudgetInput): Promise<ReadTreeBudgetResult> {
  try {
    return await client.workflow.getHandle(runId).query(treeBudgetQuery);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { budgets: {}, gone: true };
    // Temporal, or the ledger run's worker, could not answer now: the activity's retry policy tries again.
    throw new InfrastructureError(`could not read the budget ledger of run "${runId}": ${(error as Error).message}`);
  }
}
