/**
 * The spend ledger workflow of one tenant or owner (spend-door.ts says what it answers). A run's
 * charges come in an update (the last ones of an ending run in a signal): checked (the one usage validator, and they must be this ledger's),
 * each call counted once (one sent again is not counted), added to each window it names, and
 * answered with those windows' totals. It keeps each size's last 31 windows, goes on as new
 * past 1,000 events or when Temporal suggests it (carrying its totals and the calls it may still
 * be sent again),
 * and closes once idle past every window it kept (the next charge starts it again). Runs in the
 * workflow: no I/O.
 */
import { allHandlersFinished, condition, log, setHandler, setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import { z } from 'zod';
import { addUsage, checkedUsage, UsageSchema, type Usage } from '../../core/usage';
import { KeelError, toApplicationFailure, toKeelError } from '../../core/errors';
import { describeZodError } from '../../core/schema-errors';
import { cutText } from '../../core/messages';
import { continueOnCurrentBuild, sessionVersioningOptions } from '../../engine/versioning';
import {
  chargeSpendSignal,
  chargeSpendUpdate,
  spendQuery,
  SpendChargeSchema,
  SpendScopeSchema,
  windowStart,
  type SpendAnswer,
  type SpendCharge,
  type SpendReport,
  type WindowSpend,
} from './spend-door';

/** Windows of each size kept (a day's: a month). */
const WINDOWS_KEPT = 31;
/** Events of history past which the ledger goes on as new (each send adds about three). */
const MAX_EVENTS = 1000;
/** How long a charge may be sent again after it counted (its activity's schedule-to-close, with room). */
const REPEATS_FOR_MS = 60 * 60 * 1000;

const LedgerStateSchema = z.object({
  windows: z.array(z.object({ start: z.number(), size: z.number(), usage: UsageSchema })),
  /** By Temporal run: the last charge counted of it, and when. */
  last: z.record(z.string(), z.object({ n: z.number(), at: z.number() })),
  charges: z.number(),
  repeats: z.number(),
});
type LedgerState = z.infer<typeof LedgerStateSchema>;

export const SpendLedgerInputSchema = z.object({ scope: SpendScopeSchema, name: z.string().min(1), state: LedgerStateSchema.optional() });
export type SpendLedgerInput = z.infer<typeof SpendLedgerInputSchema>;

/** The ledger of `scope` `name`. */
export async function keelSpendLedger(raw: SpendLedgerInput): Promise<SpendReport> {
  const { scope, name, state: carried } = SpendLedgerInputSchema.parse(raw);
  const state: LedgerState = carried ?? { windows: [], last: {}, charges: 0, repeats: 0 };
  let touched = Date.now();
  const report = (): SpendReport => ({
    scope,
    name,
    windows: [...state.windows].sort((a, b) => b.start - a.start || a.size - b.size),
    charges: state.charges,
    repeats: state.repeats,
  });
  const windowOf = (size: number, at: number): WindowSpend => {
    const start = windowStart(at, size);
    let window = state.windows.find((entry) => entry.size === size && entry.start === start);
    if (!window) {
      window = { start, size, usage: {} };
      state.windows.push(window);
      // The oldest windows of this size beyond the kept ones go.
      const ofSize = state.windows.filter((entry) => entry.size === size).sort((a, b) => b.start - a.start);
      for (const old of ofSize.slice(WINDOWS_KEPT)) state.windows.splice(state.windows.indexOf(old), 1);
    }
    return window;
  };

  // Declared before the handlers: an update buffered for a new run (a ledger gone on as new) is handled as they are set.
  const source = (charge: SpendCharge, n: number) => ({
    from: `call #${n} of run ${cutText(charge.run, 100)}, charged to the spend ledger of ${scope} ${name}`,
  });

  setHandler(spendQuery, report);
  setHandler(
    chargeSpendUpdate,
    (charge: SpendCharge): SpendAnswer => {
      try {
        return count(charge);
      } catch (error) {
        // Refused as the caller's failure (a sum keel cannot hold exactly), never a failed workflow task.
        throw toApplicationFailure(toKeelError(error));
      }
    },
    {
      validator: (charge: SpendCharge) => {
        try {
          check(charge);
        } catch (error) {
          throw toApplicationFailure(toKeelError(error));
        }
      },
    },
  );

  setHandler(chargeSpendSignal, (charge: SpendCharge) => {
    try {
      check(charge);
      count(charge);
    } catch (error) {
      // Nobody waits for a signal's answer: a charge keel cannot count changes nothing and is logged.
      log.warn('refused a charge sent by signal', { reason: toKeelError(error).message });
    }
  });

  function check(charge: SpendCharge): void {
    const parsed = SpendChargeSchema.safeParse(charge);
    if (!parsed.success) throw new KeelError('INVALID_ARGUMENT', `not a charge: ${describeZodError(parsed.error)}`);
    if (parsed.data.scope !== scope || parsed.data.name !== name)
      throw new KeelError('INVALID_ARGUMENT', `a charge for ${parsed.data.scope} ${parsed.data.name} sent to the ledger of ${scope} ${name}`);
    for (const { n, usage } of parsed.data.charges) checkedUsage(usage, source(parsed.data, n));
  }

  function count(charge: SpendCharge): SpendAnswer {
    touched = Date.now();
    const sizes = [...new Set(charge.windows)];
    const last = state.last[charge.run]?.n ?? 0;
    // Every sum first: charges that cannot all be counted are counted in no window.
    const sums = new Map<WindowSpend, Usage>();
    let counted: Usage = {};
    let upTo = last;
    for (const { n, at, usage: raw } of charge.charges) {
      if (n <= upTo) {
        state.repeats += 1;
        continue;
      }
      const usage = checkedUsage(raw, source(charge, n));
      for (const size of sizes) {
        const window = windowOf(size, at);
        sums.set(window, addUsage(sums.get(window) ?? window.usage, usage, `call #${n} of run ${charge.run}`));
      }
      counted = addUsage(counted, usage);
      upTo = n;
    }
    for (const [window, usage] of sums) window.usage = usage;
    if (upTo > last) {
      state.charges += charge.charges.filter(({ n }) => n > last).length;
      state.last[charge.run] = { n: upTo, at: touched };
    }
    return { windows: sizes.map((size) => windowOf(size, charge.at)), counted, upTo, takesSignals: true };
  }

  // Open while a window it keeps is open, or a charge came within the last hour.
  const idleAfter = () => Math.max(REPEATS_FOR_MS, ...state.windows.map((window) => window.start + window.size - touched));
  // Goes on as new early: a worker that takes the ledger over (its last one died) replays it whole before each answer.
  const due = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= MAX_EVENTS;
  for (;;) {
    const idle = !(await condition(due, idleAfter()));
    await condition(allHandlersFinished);
    if (idle && Date.now() - touched >= idleAfter()) return report();
    if (!due()) continue;
    // What may still be sent again goes with the totals.
    const last = Object.fromEntries(Object.entries(state.last).filter(([, charge]) => Date.now() - charge.at < REPEATS_FOR_MS));
    await continueOnCurrentBuild<typeof keelSpendLedger>({ scope, name, state: { ...state, last } });
  }
}

// Long-lived, and its code is keel's own (changed only under patched()): it follows new builds on a versioned worker, as a session does.
setWorkflowOptions(sessionVersioningOptions, keelSpendLedger);
