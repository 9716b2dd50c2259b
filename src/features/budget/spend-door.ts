/**
 * The spend ledger of a tenant or an owner (docs/tenants.md, "Spend per tenant"): a workflow of
 * its own, `spend/<scope>/<name>`, that every run of that tenant (owner) with a Budget of scope
 * `tenant` (`owner`) tells what each of its calls spent, and asks what the window spent so far.
 * Here: its names, the shape of a charge and of its answer, and Budget's activity that sends a
 * charge (update-with-start, so the ledger is started by its first charge). Pure: declarations
 * the workflow holds (the activity's Node half is activities/spend.ts).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import { UsageSchema, type Usage } from '../../core/usage';
import { defineActivity } from '../../middleware/activity-door';

/** The workflow type of a spend ledger. */
export const SPEND_LEDGER_WORKFLOW = 'keelSpendLedger';

/** Whose spend a ledger counts. */
export const SpendScopeSchema = z.enum(['tenant', 'owner']);
export type SpendScope = z.infer<typeof SpendScopeSchema>;

/** The workflow id of the ledger of `name` (a tenant or an owner). */
export const spendLedgerId = (scope: SpendScope, name: string): string => `spend/${scope}/${name}`;

/**
 * What a run sends its ledger: the calls it has not sent yet (`charges`: each call's number in
 * the run, 1, 2, … in order, when it was made, and what it spent), and a read of the windows of
 * each size `windows` (ms: a window is `[k·size, (k+1)·size)` since the epoch, UTC days for a
 * day) at the run's time `at`. `run` is the Temporal run that made the calls: a call sent again
 * (the activity retried after the ledger counted it, a worker that died before the run recorded
 * the answer) is known by its run and number, and counts once. No charges: a read.
 */
export const SpendChargeSchema = z
  .object({
    scope: SpendScopeSchema,
    name: z.string().min(1).max(256),
    at: z.number().int().min(0),
    windows: z.array(z.number().int().min(1000)).min(1).max(8),
    run: z.string().min(1).max(200),
    charges: z.array(z.object({ n: z.number().int().min(1), at: z.number().int().min(0), usage: z.unknown() }).strict()).max(10_000),
    /** The run's last send: no answer is wanted, so it goes by signal (with start), not waiting for the ledger. */
    last: z.literal(true).optional(),
  })
  .strict();
export type SpendCharge = z.infer<typeof SpendChargeSchema>;

/** What a window spent: its start (ms since the epoch), its size, and the usage counted in it. */
export const WindowSpendSchema = z.object({ start: z.number(), size: z.number(), usage: UsageSchema });
export type WindowSpend = z.infer<typeof WindowSpendSchema>;

/** The answer: each window asked for (at `at`) with what it spent, the charges counted; what of them was counted now (not sent before); the number of the run's last call counted. */
export const SpendAnswerSchema = z.object({
  windows: z.array(WindowSpendSchema),
  counted: UsageSchema,
  upTo: z.number(),
  /** The ledger takes the `chargeLast` signal: a ledger of a build before it answers without, and is sent its last charges by update. */
  takesSignals: z.literal(true).optional(),
});
export type SpendAnswer = z.infer<typeof SpendAnswerSchema>;

/** What a ledger holds: whose it is, and every window it still keeps, newest first. */
export interface SpendReport {
  scope: SpendScope;
  name: string;
  windows: WindowSpend[];
  /** Calls counted, and calls sent again and not counted twice. */
  charges: number;
  repeats: number;
}

/** Counts a run's charges and reads its windows (validated first: charges keel cannot count are refused and change nothing). */
export const chargeSpendUpdate = defineUpdate<SpendAnswer, [SpendCharge]>('charge');
/**
 * Counts a run's last charges, unanswered: what a run sends as it ends, so its end waits for
 * the server's acknowledgement only, not for the ledger's workflow task. Checked as the
 * update's are; a refused one changes nothing and is logged.
 */
export const chargeSpendSignal = defineSignal<[SpendCharge]>('chargeLast');
/** The ledger, for `keel cost`. */
export const spendQuery = defineQuery<SpendReport>('spend');

/** The start of the window of `size` ms that holds `at`. */
export const windowStart = (at: number, size: number): number => Math.floor(at / size) * size;

/** What `answer` says window `size` spent at `at`: nothing when the window it read has ended since. */
export function spentIn(answer: SpendAnswer | undefined, size: number, at: number): Usage {
  const window = answer?.windows.find((entry) => entry.size === size);
  return window && window.start === windowStart(at, size) ? window.usage : {};
}

/** `chargeSpend`: sends a run's charges to its ledger (starting it if none runs) and answers what its windows spent (a last send: null). */
export const chargeSpendDoor = defineActivity({
  name: 'chargeSpend',
  input: SpendChargeSchema,
  output: SpendAnswerSchema.nullable(),
  kind: 'local',
  describe: ({ scope, name }) => `count spend of ${scope} ${name}`,
  // The ledger's worker may be restarting: keep sending (the charge counts once however often it is sent).
  options: {
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds' },
    scheduleToCloseTimeout: '10 minutes',
  },
});

/** The spend ledgers of a run (its side is run-spend.ts): what a Budget of scope tenant or owner counts in. */
export interface SpendLedgers {
  /** Charges each call of this run from now on to the ledger of `scope` `name`, counted in windows of `size` ms. */
  join(scope: SpendScope, name: string, size: number): void;
  /** What the ledger's window of `size` ms holding now has spent, this run's calls counted first. */
  spent(scope: SpendScope, name: string, size: number): Promise<Usage>;
}
