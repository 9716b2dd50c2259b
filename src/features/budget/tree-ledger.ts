/**
 * The budget ledger of a tree of runs. The run where a Budget is set keeps it: the usage of its
 * own model calls and of every model call a run below it (a sub-agent, a background task, a
 * session sub-agent's turn, at any depth) tells it of, right after the call. Those runs ask it
 * before each model call, through an activity that queries it, so the tree stops once the limit
 * is crossed, whatever each run was handed down when it started. Runs in the workflow: no I/O.
 */
import { getExternalWorkflowHandle, setHandler } from '@temporalio/workflow';
import { z } from 'zod';
import { addUsage, checkedUsage, type Usage } from '../../core/usage';
import { toKeelError } from '../../core/errors';
import { treeBudgetQuery, treeUsageSignal } from '../../core/protocol';
import type { RunState } from '../../workflows/run-state';
import { recordRefusedSignal } from '../../workflows/run-status';
import { featureActivityCaller } from '../../workflows/feature-activity';
import { describeZodError } from '../../core/schema-errors';
import { cutText } from '../../core/messages';
import { readTreeBudgetDoor, type ReadTreeBudgetResult, type TreeLedger } from './ledger-door';

/** A usage report from a run below: who sent it, and usage as any report must be (`checkedUsage`). */
const ReportSchema = z.object({ from: z.string().min(1), usage: z.unknown() });

/**
 * A run's side of the ledger, built the first time a middleware asks for it (`get`): a run
 * without a Budget keeps none, and `counted` and `flush` do nothing for it.
 */
export function lazyLedger(run: RunState): { get: () => RunLedger; counted: (usage: Usage) => void; flush: () => Promise<void> } {
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

  constructor(private readonly run: RunState) {
    setHandler(treeBudgetQuery, () => ({ budgets: Object.fromEntries([...this.servers].map(([stage, spent]) => [String(stage), spent()])) }));
    setHandler(treeUsageSignal, (report) => {
      const parsed = ReportSchema.safeParse(report);
      if (!parsed.success) return recordRefusedSignal(run, 'treeUsage', `not a usage report: ${describeZodError(parsed.error)}`);
      // Named as it says it is (a forged name is shown cut short).
      const from = `run "${cutText(parsed.data.from, 100)}"`;
      try {
        // A report that cannot be counted (or would take the count past what keel adds exactly) is refused: it never lowers the count.
        run.status.treeUsage = addUsage(run.status.treeUsage ?? {}, checkedUsage(parsed.data.usage, { from }), `the usage ${from} told`);
      } catch (error) {
        return recordRefusedSignal(run, 'treeUsage', toKeelError(error).message);
      }
      run.ledgerReports = (run.ledgerReports ?? 0) + 1;
    });
  }

  get runId(): string {
    return this.run.runId;
  }

  /** A run's ledger always counts (only the middleware harness offers one that is off). */
  readonly enabled = true;

  usage(): Usage {
    return this.run.status.treeUsage ?? {};
  }

  toldFromBelow(): boolean {
    return (this.run.ledgerReports ?? 0) > 0;
  }

  serve(stage: number, spent: () => Record<string, number>): void {
    this.run.status.treeUsage ??= {};
    this.servers.set(stage, spent);
  }

  join(ledgerRunId: string): void {
    if (ledgerRunId !== this.run.runId) this.joined.add(ledgerRunId);
  }

  /** A model call of this run finished: count it here, and tell every ledger this run joined. */
  counted(usage: Usage): void {
    this.calls += 1;
    if (this.run.status.treeUsage) this.run.status.treeUsage = addUsage(this.run.status.treeUsage, usage);
    for (const ledger of this.joined) {
      const told = getExternalWorkflowHandle(ledger)
        .signal(treeUsageSignal, { from: this.run.runId, usage })
        .catch(() => {
          // The ledger run has ended: what it was not told still counts, here (this run's own usage, which
          // already summed these calls, bounds it: a sum past what keel adds exactly failed there first).
          const untold = this.run.ledgerUntold?.[ledger] ?? {};
          this.run.ledgerUntold = { ...this.run.ledgerUntold, [ledger]: addUsage(untold, usage, 'the usage no ledger was told') };
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
    return spent ? { spent, untold: this.run.ledgerUntold?.[ledgerRunId] ?? {} } : undefined;
  }
}
