/**
 * Budget as a built-in: its middleware, and its run's side of the tree's ledger, built the
 * first time a Budget asks for it (tree-ledger.ts); every model and tool call's usage is counted
 * into it, and what the run spent is told to the ledgers it joined however it ends. Pure: runs
 * in the workflow.
 */
import { provide } from '../../middleware/run-capability';
import { builtin } from '../feature';
import { budget } from './budget';
import { treeLedger } from './ledger-door';
import { lazyLedger } from './tree-ledger';

/** Budget (reference: genkit-middleware-exp/budget). */
export const budgetFeature = builtin(budget, 'genkit-middleware-exp/budget', ({ run }) => {
  const ledger = lazyLedger(run);
  return { provides: [provide(treeLedger, ledger.get)], counted: ledger.counted, settle: ledger.flush };
});
