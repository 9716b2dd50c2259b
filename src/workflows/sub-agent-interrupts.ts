/**
 * Holds deep in the tree of runs, decided at the root (DESIGN §5). A sub-agent run reports
 * its pending interrupts (its own and its descendants') to its parent with the
 * `childInterrupts` signal; the parent shows them in its own status under composite ids
 * (`<agent>-<n>/<id>`) with a `path` of run ids, and forwards a decision for one of them to
 * the child as a `resume` signal, where it is decided like any other. A person approves
 * everything from one place. Runs in the workflow: deterministic, no I/O.
 */
import { ApplicationFailure, CancellationScope, getExternalWorkflowHandle, log, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Decision } from '../core/interrupts';
import { describeZodError } from '../core/schema-errors';
import { describeUndecodable, isUndecodable } from '../core/undecodable';
import { ChildInterruptsSchema, type Interrupt } from '../core/run';
import { childInterruptsSignal, resumeSignal } from './definitions';

/** Options of `SubAgentInterrupts`. */
export interface SubAgentInterruptsOptions {
  /** This run's id (its children's ids extend it). */
  runId: string;
  /** The run to report to instead of the Temporal parent, and the key to report under (a session turn a run delegated). */
  reportTo?: { runId: string; key: string };
  /** Called whenever a child's pending interrupts change. */
  onChange: () => void;
  /** True when run `runId` may report holds under `key` (this run started it); default: any. */
  acceptsReport?: (key: string, runId: string) => boolean;
  /** Called with why a report was refused (it is logged too). */
  onRefused?: (reason: string) => void;
}

/** The pending interrupts of a run's sub-agent runs, and the way decisions reach them. */
export class SubAgentInterrupts {
  private readonly runId: string;
  private readonly reportTo: { runId: string; key: string } | undefined;
  private readonly onChange: () => void;
  private readonly acceptsReport: (key: string, runId: string) => boolean;
  private readonly onRefused: (reason: string) => void;
  /** Each child's run id and pending interrupts, as this run shows them, by the child's key (`<agent>-<n>`). */
  private readonly byChild = new Map<string, { runId: string; interrupts: Interrupt[] }>();
  /** What this run last reported to its parent, so an unchanged list is not sent again. */
  private reported = '[]';

  constructor({ runId, reportTo, onChange, acceptsReport = () => true, onRefused = () => undefined }: SubAgentInterruptsOptions) {
    this.runId = runId;
    this.reportTo = reportTo;
    this.onChange = onChange;
    this.acceptsReport = acceptsReport;
    this.onRefused = onRefused;
    setHandler(childInterruptsSignal, (raw) => {
      // Signals are not validated by Temporal: a malformed or foreign one is refused (logged, shown in status), never fails the run.
      const report = ChildInterruptsSchema.safeParse(raw);
      if (!report.success) return this.refuse(`malformed report of holds: ${isUndecodable(raw) ? describeUndecodable(raw) : describeZodError(report.error)}`);
      const { runId: childRunId, interrupts } = report.data;
      const key = report.data.key ?? (childRunId.startsWith(`${this.runId}/`) ? childRunId.slice(this.runId.length + 1) : undefined);
      if (!key || key.includes('/')) return this.refuse(`a report of holds from run "${childRunId}", which is not a sub-agent run of this run`);
      if (!this.acceptsReport(key, childRunId)) {
        return this.refuse(`a report of holds from run "${childRunId}" under "${key}": this run did not start that run (it accepts reports only from the sub-agent runs and tasks it started)`);
      }
      const shown = interrupts.map((interrupt) => ({ ...interrupt, id: `${key}/${interrupt.id}`, path: [childRunId, ...(interrupt.path ?? [])] }));
      if (shown.length) this.byChild.set(key, { runId: childRunId, interrupts: shown });
      else this.byChild.delete(key);
      this.onChange();
    });
  }

  private refuse(reason: string): void {
    log.warn('refused a childInterrupts signal', { reason });
    this.onRefused(reason);
  }

  /** Every pending interrupt of the sub-agent runs, oldest child first. */
  pending(): Interrupt[] {
    return [...this.byChild.values()].flatMap((child) => child.interrupts);
  }

  /** True for an id of a sub-agent's interrupt (`<agent>-<n>/<id>`). */
  static isNested(interruptId: string): boolean {
    return interruptId.includes('/');
  }

  /** Throws an ApplicationFailure unless a sub-agent run holds this interrupt. */
  check(interruptId: string, ownPending: readonly string[]): void {
    if (this.pending().some((interrupt) => interrupt.id === interruptId)) return;
    const known = [...ownPending, ...this.pending().map((interrupt) => interrupt.id)];
    throw ApplicationFailure.create({
      type: 'NOT_FOUND',
      nonRetryable: true,
      message: `unknown interrupt id "${interruptId}"; pending interrupts: ${known.length ? known.join(', ') : '(none)'}`,
    });
  }

  /** The pending sub-agent interrupt with this id, if any. */
  find(interruptId: string): Interrupt | undefined {
    return this.pending().find((interrupt) => interrupt.id === interruptId);
  }

  /** Sends a decision on to the sub-agent run that holds it (a stand-in output already checked by the caller). */
  async forward(decision: Decision): Promise<void> {
    const separator = decision.interruptId.indexOf('/');
    const key = decision.interruptId.slice(0, separator);
    const child = this.byChild.get(key);
    if (!child) return;
    await getExternalWorkflowHandle(child.runId).signal(resumeSignal, { ...decision, interruptId: decision.interruptId.slice(separator + 1) });
    // Shown as decided until the child reports again.
    const remaining = child.interrupts.filter((interrupt) => interrupt.id !== decision.interruptId);
    if (remaining.length) this.byChild.set(key, { ...child, interrupts: remaining });
    else this.byChild.delete(key);
    this.onChange();
  }

  /** Reports this run's pending interrupts (its own and its sub-agents') to its parent run, if it has one. */
  reportToParent(pending: readonly Interrupt[]): void {
    const parent = this.reportTo?.runId ?? workflowInfo().parent?.workflowId;
    const json = JSON.stringify(pending);
    if (!parent || json === this.reported) return;
    this.reported = json;
    const report = { runId: this.runId, interrupts: [...pending], ...(this.reportTo ? { key: this.reportTo.key } : {}) };
    // Sent even from a cancelled run (its last report clears its holds); a parent that has
    // finished cannot be told, and its status no longer matters.
    void CancellationScope.nonCancellable(() => getExternalWorkflowHandle(parent).signal(childInterruptsSignal, report)).catch(() => undefined);
  }

  /** Forgets a sub-agent run that has settled: none of its holds can be decided any more. */
  forget(childRunId: string): void {
    for (const [key, child] of this.byChild) if (child.runId === childRunId) this.byChild.delete(key);
    this.onChange();
  }
}
