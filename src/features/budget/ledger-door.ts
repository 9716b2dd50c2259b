/**
 * The door of Budget's one activity, `readTreeBudget`: asks the run that keeps the tree's
 * ledger what each of its budgets has spent, for a run below it about to call its model.
 * Pure: the declaration the workflow holds (the Node half is activities/tree-budget.ts).
 */
import { z } from 'zod';
import { defineActivity } from '../../middleware/activity-door';

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
