/**
 * Budget as a built-in: its middleware, and its run's side of the tree's ledger, built the
 * first time a Budget asks for it (tree-ledger.ts); every model and tool call's usage is counted
 * into it, and what the run spent is told to the ledgers it joined however it ends; and its side
 * of the spend ledgers of its tenant or owner (run-spend.ts), built the same way. Pure: runs in
 * the workflow.
 */
import { provide } from '../../middleware/run-capability';
import { builtin } from '../feature';
import { budget } from './budget';
import { treeLedger } from './ledger-door';
import { BudgetStateSchema, lazyLedger } from './tree-ledger';
import { RunSpend } from './run-spend';
import { spendLedgers } from './spend-door';

/** Budget (reference: genkit-middleware-exp/budget). */
export const budgetFeature = builtin(budget, 'genkit-middleware-exp/budget', {
  state: {
    schema: BudgetStateSchema,
    // Carried before slots: the tree's usage stood in the run's status.
    legacy: (carried) => ({ ...carried, treeUsage: (carried.status as { treeUsage?: unknown } | undefined)?.treeUsage }),
  },
  run: (services) => {
    const ledger = lazyLedger(services);
    // Built when a Budget of scope tenant or owner first asks for it: a run without one charges nothing.
    let spend: RunSpend | undefined;
    return {
      provides: [provide(treeLedger, ledger.get), provide(spendLedgers, () => (spend ??= new RunSpend()))],
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
