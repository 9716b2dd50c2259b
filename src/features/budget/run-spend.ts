/**
 * A run's side of the spend ledgers its Budgets of scope `tenant` or `owner` count in
 * (spend-door.ts). Before a model call a Budget asks what the window has spent: the run sends
 * its ledger the calls it has not sent yet and reads the window (one local activity; the first,
 * sent as the Budget is set up, starts the ledger) at most once a second, and between sends it adds its own calls to the last
 * answer. The calls still unsent are sent before the run ends or continues as new (by signal, unanswered). A call sent
 * again (the activity retried, or re-run on another worker after a crash) counts once: the
 * ledger knows it by the run and its number. A send that fails for good (the ledger refused it,
 * or was unreachable for the activity's whole schedule-to-close) fails the run at its next check
 * or its end: a count it cannot trust is never gone on with. A run with no such Budget sends
 * nothing. Runs in the workflow: no I/O.
 */
import { workflowInfo } from '@temporalio/workflow';
import { addUsage, type Usage } from '../../core/usage';
import { toKeelError } from '../../core/errors';
import { featureActivityCaller } from '../../engine/feature-activity';
import { flatten } from './budget';
import { chargeSpendDoor, spentIn, type SpendAnswer, type SpendCharge, type SpendLedgers, type SpendScope } from './spend-door';

/** How often a run sends to and reads its ledger at most: the others' spend since the last read is not seen before the next. */
export const READ_EVERY_MS = 1000;

const callActivity = featureActivityCaller();

interface Ledger {
  scope: SpendScope;
  name: string;
  sizes: Set<number>;
  /** Calls counted so far (the last one's number); those not sent yet; those the last answer had not counted. */
  calls: number;
  unsent: Array<{ n: number; at: number; usage: Usage }>;
  unread: Array<{ n: number; usage: Usage }>;
  /** The last answer, and when it was asked for. */
  answer: SpendAnswer | undefined;
  askedAt: number;
  /** Sends, in order; a failure to send. */
  queue: Promise<void>;
  failed: unknown;
}

/** One run's spend ledgers. */
export class RunSpend implements SpendLedgers {
  private readonly ledgers = new Map<string, Ledger>();

  join(scope: SpendScope, name: string, size: number): void {
    const key = `${scope}/${name}`;
    const ledger: Ledger = this.ledgers.get(key) ?? {
      scope,
      name,
      sizes: new Set<number>(),
      calls: 0,
      unsent: [],
      unread: [],
      answer: undefined,
      askedAt: 0,
      queue: Promise.resolve(),
      failed: undefined,
    };
    ledger.sizes.add(size);
    this.ledgers.set(key, ledger);
    // Read at once, while the run sets up: its first model call then waits less for the answer.
    if (!ledger.answer && !ledger.askedAt) this.send(ledger);
  }

  /** A call of this run spent `usage`: it goes with the next send of every ledger joined. */
  counted(usage: Usage): void {
    if (!Object.keys(flatten(usage)).length) return;
    for (const ledger of this.ledgers.values()) {
      const n = ++ledger.calls;
      ledger.unsent.push({ n, at: Date.now(), usage });
      ledger.unread.push({ n, usage });
    }
  }

  async spent(scope: SpendScope, name: string, size: number): Promise<Usage> {
    const ledger = this.ledgers.get(`${scope}/${name}`)!;
    if (Date.now() - ledger.askedAt >= READ_EVERY_MS) this.send(ledger);
    await this.settled(ledger);
    const upTo = ledger.answer?.upTo ?? 0;
    ledger.unread = ledger.unread.filter((call) => call.n > upTo);
    return ledger.unread.reduce((sum, call) => addUsage(sum, call.usage, 'the run’s own spend'), spentIn(ledger.answer, size, Date.now()));
  }

  /** Sends every call not sent yet (before the run ends or continues as new): a last send, unanswered, so the end waits less. */
  async flush(): Promise<void> {
    for (const ledger of this.ledgers.values()) {
      // A ledger of an older build has no handler for the signal: it is sent its last charges by update.
      if (ledger.unsent.length) this.send(ledger, { last: ledger.answer?.takesSignals === true });
      await this.settled(ledger);
    }
  }

  private send(ledger: Ledger, { last = false } = {}): void {
    ledger.askedAt = Date.now();
    const charges = ledger.unsent.splice(0);
    const charge: SpendCharge = { scope: ledger.scope, name: ledger.name, at: Date.now(), windows: [...ledger.sizes], run: workflowInfo().runId, charges };
    if (last) charge.last = true;
    ledger.queue = ledger.queue.then(async () => {
      if (ledger.failed) return;
      try {
        ledger.answer = (await callActivity(chargeSpendDoor, charge)) ?? ledger.answer;
      } catch (error) {
        ledger.failed = error;
      }
    });
  }

  private async settled(ledger: Ledger): Promise<void> {
    for (let queue; queue !== ledger.queue;) {
      queue = ledger.queue;
      await queue;
    }
    if (ledger.failed) throw toKeelError(ledger.failed);
  }
}
