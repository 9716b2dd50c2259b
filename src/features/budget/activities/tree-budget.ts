/**
 * The `readTreeBudget` activity: asks the run that keeps a tree's budget ledger what each of
 * its budgets has spent (the `treeBudgetQuery`), for a sub-agent run below it about to call its
 * model. Works on a ledger run that has ended (Temporal answers queries of closed runs). Node side.
 */
import { QueryNotRegisteredError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { treeBudgetQuery } from '../../../core/protocol';
import { InfrastructureError } from '../../../activities/infrastructure-error';
import { implementActivity } from '../../../activities/feature-activity';
import { readTreeBudgetDoor, type ReadTreeBudgetResult } from '../ledger-door';

/**
 * What the ledger run answers; `{ gone: true }` when no such run exists any more (its history was
 * deleted); no budgets when the run keeps no ledger (a run builds its side of the ledger when its
 * Budget first asks for it: one without a Budget, or not yet set up, has no handler for the query).
 */
export async function readTreeBudget(client: Client, { runId }: { runId: string }): Promise<ReadTreeBudgetResult> {
  try {
    return await client.workflow.getHandle(runId).query(treeBudgetQuery);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { budgets: {}, gone: true };
    if (error instanceof QueryNotRegisteredError) return { budgets: {} };
    // Temporal, or the ledger run's worker, could not answer now: the activity's retry policy tries again.
    throw new InfrastructureError(`could not read the budget ledger of run "${runId}": ${(error as Error).message}`);
  }
}

/** The Node half of Budget: the `readTreeBudget` activity. */
export const budgetActivities = [implementActivity(readTreeBudgetDoor, (input, { client }) => readTreeBudget(client, input))];
