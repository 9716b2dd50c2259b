/**
 * Budget as a built-in: its middleware, and its part of each run, lent to the middleware where
 * it is created: its side of the tree's ledger (tree-ledger.ts), built the first time a Budget
 * uses it, into which every model and tool call's usage is counted, and what the run spent is
 * told to the ledgers it joined however it ends; and its side of the spend ledgers of its tenant
 * or owner (run-spend.ts), built the same way. Pure: runs in the workflow.
 */
import { builtin, once } from '../feature';
import { budget } from './budget';
import type { BudgetPart } from './ledger-door';
import { BudgetStateSchema, lazyLedger } from './tree-ledger';
import { RunSpend } from './run-spend';

/** Budget (reference: genkit-middleware-exp/budget). */
export const budgetFeature = builtin(budget, 'genkit-middleware-exp/budget', {
  state: {
    schema: BudgetStateSchema,
    // Carried before slots: the tree's usage stood in the run's status.
    legacy: (carried) => ({ ...carried, treeUsage: (carried.status as { treeUsage?: unknown } | undefined)?.treeUsage }),
  },
  run: (services) => {
    const ledger = lazyLedger(services);
    // Built when a Budget of scope tenant or owner first uses it: a run without one charges nothing.
    let spend: RunSpend | undefined;
    const spendLedgers = once(() => (spend = new RunSpend()));
    const part: BudgetPart = {
      get tree() {
        return ledger.get();
      },
      get spend() {
        return spendLedgers();
      },
    };
    return {
      part,
      status: () => (services.state.treeUsage ? { treeUsage: services.state.treeUsage } : {}),
      counted: (usage) => {
        ledger.counted(usage);
        spend?.counted(usage);
      },
      settle: async () => {
        await ledger.flush();
        await spend?.flush();
      },
    };
  },
});
