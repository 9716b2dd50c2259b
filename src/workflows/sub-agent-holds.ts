/**
 * Holds deep in the tree of runs, decided at the root (docs/holds.md). A sub-agent run reports
 * its pending holds (its own and its descendants') to its parent with the
 * `childInterrupts` signal; the parent shows them in its own status under composite ids
 * (`<agent>-<n>/<id>`) with a `path` of run ids, and forwards a decision for one of them to
 * the child as a `resume` signal, where it is decided like any other. A person approves
 * everything from one place. A background task whose launching run has ended can be followed
 * by a later run of the same conversation (`reportHoldsTo`): it then reports its holds there
 * too, so they show, and are decided, where the conversation goes on.
 * Runs in the workflow: deterministic, no I/O.
 */
import { ApplicationFailure, CancellationScope, getExternalWorkflowHandle, log, setHandler, workflowInfo } from '@temporalio/workflow';
import { decisionRecord, type Decision, type DecisionRecord, type DecisionRoute, type Resumption } from '../core/holds';
import { registeredHoldKind } from '../features/catalog';
import { checkedOutput, taken, unknownHold, type OutputCheck } from './pending-hold';
import { describeZodError } from '../core/schema-errors';
import { describeUndecodable, isUndecodable } from '../core/undecodable';
import { ChildHoldsSchema, KEPT_FOLLOWERS, ReportTargetSchema, type Hold } from '../core/run';
import { childHoldsSignal, reportHoldsToSignal, resumeSignal } from '../core/protocol';
import { acceptsReport } from './reporters';
import { recordRefusedSignal } from './run-status';
import type { RunState } from './run-state';

/** The pending holds of a run's sub-agent runs, and the way decisions reach them. */
export class SubAgentHolds {
  /** Each child's run id and pending holds, as this run shows them, by the child's key (`<agent>-<n>`). */
  private readonly byChild = new Map<string, { runId: string; interrupts: Hold[] }>();
  /** What this run last reported to each run it reports to, by that run's id, so an unchanged list is not sent again. */
  private readonly reported = new Map<string, string>();

  /** `reportTo`: the run to report to instead of the parent, and its key (a session run a run delegated); refusals and followers live in `run`. */
  constructor(
    private readonly run: RunState,
    private readonly reportTo: { runId: string; key: string } | undefined,
    private readonly onChange: () => void,
  ) {
    setHandler(
      reportHoldsToSignal,
      (raw) => {
        const target = ReportTargetSchema.safeParse(raw);
        if (!target.success)
          return this.refuse('reportHoldsTo', `malformed follower: ${isUndecodable(raw) ? describeUndecodable(raw) : describeZodError(target.error)}`);
        if (target.data.runId === this.run.runId) return this.refuse('reportHoldsTo', 'a run cannot follow its own holds');
        const others = (this.run.followers ?? []).filter((follower) => follower.runId !== target.data.runId);
        this.run.followers = [...others, target.data].slice(-KEPT_FOLLOWERS);
        // Told at once what waits now (and from then on, whenever it changes).
        this.reported.delete(target.data.runId);
        this.onChange();
      },
      { description: 'Internal: a later run of the conversation follows this task: its holds are reported there too, under the key given.' },
    );
    setHandler(childHoldsSignal, (raw) => {
      // Signals are not validated by Temporal: a malformed or foreign one is refused (logged, shown in status), never fails the run.
      const report = ChildHoldsSchema.safeParse(raw);
      if (!report.success)
        return this.refuse('childInterrupts', `malformed report of holds: ${isUndecodable(raw) ? describeUndecodable(raw) : describeZodError(report.error)}`);
      const { runId: childRunId, interrupts } = report.data;
      const key = report.data.key ?? (childRunId.startsWith(`${this.run.runId}/`) ? childRunId.slice(this.run.runId.length + 1) : undefined);
      if (!key || key.includes('/'))
        return this.refuse('childInterrupts', `a report of holds from run "${childRunId}", which is not a sub-agent run of this run`);
      if (!acceptsReport(this.run, key, childRunId)) {
        return this.refuse(
          'childInterrupts',
          `a report of holds from run "${childRunId}" under "${key}": this run did not start that run (it accepts reports only from the sub-agent runs and tasks it started)`,
        );
      }
      const shown = interrupts.map((interrupt) => ({ ...interrupt, id: `${key}/${interrupt.id}`, path: [childRunId, ...(interrupt.path ?? [])] }));
      if (shown.length) this.byChild.set(key, { runId: childRunId, interrupts: shown });
      else this.byChild.delete(key);
      this.onChange();
    });
  }

  private refuse(signal: string, reason: string): void {
    log.warn(`refused a ${signal} signal`, { reason });
    recordRefusedSignal(this.run, signal, reason);
  }

  /** Every pending hold of the sub-agent runs, oldest child first. */
  pending(): Hold[] {
    return [...this.byChild.values()].flatMap((child) => child.interrupts);
  }

  /** True for an id of a sub-agent's hold (`<agent>-<n>/<id>`). */
  static isNested(interruptId: string): boolean {
    return interruptId.includes('/');
  }

  /**
   * A decision on a sub-agent's hold, checked: an ApplicationFailure unless a sub-agent run raised
   * it, or when its kind (known to this worker) does not take it. Returns it with what the held
   * call gets (absent for a kind this worker does not have).
   */
  check(decision: Decision, ownPending: () => readonly string[], declared: boolean): { decision: Decision; resumption?: Resumption } {
    const held = this.find(decision.interruptId);
    if (!held) throw unknownHold(decision.interruptId, [...ownPending(), ...this.pending().map((interrupt) => interrupt.id)]);
    const hold = held.raisedBy !== undefined ? registeredHoldKind(held.raisedBy, held.kind) : undefined;
    return hold ? { decision, resumption: taken(hold, held, decision, declared) } : { decision };
  }

  /** The pending sub-agent hold with this id, if any. */
  find(interruptId: string): Hold | undefined {
    return this.pending().find((interrupt) => interrupt.id === interruptId);
  }

  /** The route a decision took: a signal that says it was forwarded counts as such only from a run this one reports its holds to. */
  routeOf(decision: Decision, route: 'update' | 'signal'): DecisionRoute {
    if (route !== 'signal' || decision.forwardedFrom === undefined) return route;
    const above = [this.reportTo?.runId ?? workflowInfo().parent?.workflowId, ...(this.run.followers ?? []).map((follower) => follower.runId)];
    return above.includes(decision.forwardedFrom) ? 'forwarded' : 'signal';
  }

  /**
   * Sends a decision on a sub-agent's hold to the run holding it, where it is taken like any
   * other (and recorded as forwarded from here); returns its record here. A stand-in output is
   * checked here first, so the sub-agent run never has to refuse (and drop) it.
   */
  async forward(decision: Decision, value: Resumption | undefined, route: DecisionRoute, validate: OutputCheck): Promise<DecisionRecord> {
    const held = this.find(decision.interruptId)!;
    if ('respond' in decision && held.toolName && held.respond !== 'decide' && (value === undefined || 'output' in value)) {
      const respond = decision.respond;
      // A tool this worker does not know (a sub-agent's own workflow-local tool) is left to the sub-agent to check.
      const checked = await checkedOutput(validate, held.toolName, decision.interruptId, respond).catch((error: unknown) => {
        if (error instanceof ApplicationFailure && error.type === 'NOT_FOUND') return respond;
        throw error;
      });
      decision = { ...decision, respond: checked };
    }
    await this.send({ ...decision, forwardedFrom: this.run.runId });
    return decisionRecord(held, decision, route);
  }

  /** Sends a decision on to the sub-agent run that holds it. */
  private async send(decision: Decision): Promise<void> {
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

  /**
   * Reports this run's pending holds (its own and its sub-agents') to the run it answers to
   * (its parent, or `reportTo`) and to every run that follows it, each under its own key.
   */
  reportToParent(pending: readonly Hold[]): void {
    const parent = this.reportTo?.runId ?? workflowInfo().parent?.workflowId;
    const targets: Array<{ runId: string; key?: string }> = [
      ...(parent ? [{ runId: parent, ...(this.reportTo ? { key: this.reportTo.key } : {}) }] : []),
      ...(this.run.followers ?? []),
    ];
    const json = JSON.stringify(pending);
    for (const target of targets) {
      if ((this.reported.get(target.runId) ?? '[]') === json) continue;
      this.reported.set(target.runId, json);
      const report = { runId: this.run.runId, interrupts: [...pending], ...(target.key !== undefined ? { key: target.key } : {}) };
      // Sent even from a cancelled run (its last report clears its holds); a run that has
      // finished cannot be told, and its status no longer matters.
      void CancellationScope.nonCancellable(() => getExternalWorkflowHandle(target.runId).signal(childHoldsSignal, report)).catch(() => undefined);
    }
  }

  /** Forgets a sub-agent run that has settled: none of its holds can be decided any more. */
  forget(childRunId: string): void {
    for (const [key, child] of this.byChild) if (child.runId === childRunId) this.byChild.delete(key);
    this.onChange();
  }
}
