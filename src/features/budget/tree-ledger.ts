/**
 * The budget ledger of a tree of runs. The run where a Budget is set keeps it: the usage of its
 * own model calls and of every model call a run below it (a sub-agent, a background task, a
 * session sub-agent's turn, at any depth) tells it of, right after the call. Those runs ask it
 * before each model call, through an activity that queries it, so the tree stops once the limit
 * is crossed, whatever each run was handed down when it started. Runs in the workflow: no I/O.
 */
import { getExternalWorkflowHandle, setHandler } from '@temporalio/workflow';
import { z } from 'zod';
import { UsageSchema, addUsage, checkedUsage, type Usage } from '../../core/usage';
import { toKeelError } from '../../core/errors';
import { treeBudgetQuery, treeUsageSignal } from '../../core/protocol';
import type { RunServices } from '../feature';
import { featureActivityCaller } from '../../engine/feature-activity';
import { describeZodError } from '../../core/schema-errors';
import { cutText } from '../../core/messages';
import { readTreeBudgetDoor, type ReadTreeBudgetResult, type TreeLedger } from './ledger-door';

/** Budget's slot of its run's state: what the run's ledger counted, and what it could not tell the ledgers it joined. */
export const BudgetStateSchema = z.object({
  /** The usage of the tree below a run that keeps a ledger (its `status.treeUsage`; absent: it keeps none). */
  treeUsage: UsageSchema.optional(),
  /** Usage this run could not tell the ledgers it counts against (they had ended), by ledger run id. */
  ledgerUntold: z.record(z.string(), UsageSchema).default({}),
  /** How many model calls of runs below this one were told to its ledger. */
  ledgerReports: z.number().int().nonnegative().default(0),
});
export type BudgetState = z.infer<typeof BudgetStateSchema>;

/** What a run's ledger is lent of its run. */
type LedgerRun = Pick<RunServices<BudgetState>, 'runId' | 'state' | 'refuseSignal'>;

/** A usage report from a run below: who sent it, and usage as any report must be (`checkedUsage`). */
const ReportSchema = z.object({ from: z.string().min(1), usage: z.unknown() });

/**
 * A run's side of the ledger, built the first time a middleware asks for it (`get`): a run
 * without a Budget keeps none, and `counted` and `flush` do nothing for it.
 */
export function lazyLedger(run: LedgerRun): { get: () => RunLedger; counted: (usage: Usage) => void; flush: () => Promise<void> } {
  let ledger: RunLedger | undefined;
  return {
    get: () => (ledger ??= new RunLedger(run)),
    counted: (usage) => ledger?.counted(usage),
    flush: async () => ledger?.flush(),
  };
}

/** Calls the ledger door (its options are its own: no agent spec needed). */
const callActivity = featureActivityCaller();

/** One run's side of the tree ledger: the ledger it keeps (if it has a Budget), the ledgers it tells. */
export class RunLedger implements TreeLedger {
  private readonly servers = new Map<number, () => Record<string, number>>();
  private readonly joined = new Set<string>();
  private telling: Array<Promise<void>> = [];
  /** Model calls of this run counted so far; an answer is asked again only after one more. */
  private calls = 0;
  /** The latest answer of each ledger, and this run's call count when it was asked (stacked Budgets ask once per call). */
  private readonly answers = new Map<string, { calls: number; answer: Promise<ReadTreeBudgetResult> }>();

  constructor(private readonly run: LedgerRun) {
    const { state } = run;
    setHandler(treeBudgetQuery, () => ({ budgets: Object.fromEntries([...this.servers].map(([stage, spent]) => [String(stage), spent()])) }));
    setHandler(treeUsageSignal, (report) => {
      const parsed = ReportSchema.safeParse(report);
      if (!parsed.success) return run.refuseSignal('treeUsage', `not a usage report: ${describeZodError(parsed.error)}`);
      // Named as it says it is (a forged name is shown cut short).
      const from = `run "${cutText(parsed.data.from, 100)}"`;
      try {
        // A report that cannot be counted (or would take the count past what keel adds exactly) is refused: it never lowers the count.
        state.treeUsage = addUsage(state.treeUsage ?? {}, checkedUsage(parsed.data.usage, { from }), `the usage ${from} told`);
      } catch (error) {
        return run.refuseSignal('treeUsage', toKeelError(error).message);
      }
      state.ledgerReports += 1;
    });
  }

  get runId(): string {
    return this.run.runId;
  }

  /** A run's ledger always counts (only the middleware harness offers one that is off). */

  usage(): Usage {
    return this.run.state.treeUsage ?? {};
  }

  toldFromBelow(): boolean {
    return this.run.state.ledgerReports > 0;
  }

  serve(stage: number, spent: () => Record<string, number>): void {
    this.run.state.treeUsage ??= {};
    this.servers.set(stage, spent);
  }

  join(ledgerRunId: string): void {
    if (ledgerRunId !== this.run.runId) this.joined.add(ledgerRunId);
  }

  /** A model call of this run finished: count it here, and tell every ledger this run joined. */
  counted(usage: Usage): void {
    this.calls += 1;
    if (this.run.state.treeUsage) this.run.state.treeUsage = addUsage(this.run.state.treeUsage, usage);
    for (const ledger of this.joined) {
      const told = getExternalWorkflowHandle(ledger)
        .signal(treeUsageSignal, { from: this.run.runId, usage })
        .catch(() => {
          // The ledger run has ended: what it was not told still counts, here (this run's own usage, which
          // already summed these calls, bounds it: a sum past what keel adds exactly failed there first).
          const untold = this.run.state.ledgerUntold[ledger] ?? {};
          this.run.state.ledgerUntold = { ...this.run.state.ledgerUntold, [ledger]: addUsage(untold, usage, 'the usage no ledger was told') };
        });
      this.telling.push(told);
    }
  }

  /** Waits until every model call of this run has been told (before the run ends or continues as new). */
  async flush(): Promise<void> {
    while (this.telling.length) {
      const telling = this.telling;
      this.telling = [];
      await Promise.all(telling);
    }
  }

  async ask(ledgerRunId: string, stage: number): Promise<{ spent: Record<string, number>; untold: Usage } | undefined> {
    // Every call of this run is told before the ledger is asked, so its answer includes them.
    await this.flush();
    let asked = this.answers.get(ledgerRunId);
    if (asked?.calls !== this.calls) {
      asked = { calls: this.calls, answer: callActivity(readTreeBudgetDoor, { runId: ledgerRunId }) };
      this.answers.set(ledgerRunId, asked);
    }
    const answer = await asked.answer;
    const spent = answer.budgets[String(stage)];
    return spent ? { spent, untold: this.run.state.ledgerUntold[ledgerRunId] ?? {} } : undefined;
  }
}
