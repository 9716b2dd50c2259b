/**
 * The run's pending holds: records holds, answers the `resume` update (validated
 * synchronously) and signal, and lets a held call wait durably for its decision. A hold's
 * policy (declared by the middleware that raised it) says whether one decision answers all
 * of that middleware's holds and whether a stand-in output answers the call or goes to the
 * stage to decide. Runs in the workflow: deterministic, no I/O.
 */
import type { HoldObserver } from '../core/hold-notices';
import { durationMs } from '../core/duration';
import { HoldGuard, type HoldGuardOptions } from './hold-guard';
import { ApplicationFailure, log, setHandler } from '@temporalio/workflow';
import type { ToolInterrupt } from '../core/interrupts';
import {
  decisionJsonSchema,
  holdMismatch,
  parseDecision,
  type Decision,
  type DecisionAccepted,
  type DecisionRecord,
  type HoldKind,
  type Resumption,
} from '../core/holds';
import type { ToolRequest } from '../core/messages';
import type { Hold, RunInput } from '../core/run';
import { resumeSignal, resumeUpdate } from '../core/protocol';
import { DecisionLog } from './decision-log';
import { checkedOutput, PendingHold, taken, unknownHold, type OutputCheck } from './pending-hold';
import { ReappliedDecisions } from './reapplied-decisions';
import { SubAgentHolds } from './sub-agent-holds';
import { holdContext, recordRefusedSignal, showHolds } from './run-status';
import type { RunState } from './run-state';

/** Options of the board. */
export interface HoldBoardOptions extends HoldGuardOptions {
  /** The run's state: its holds, decisions and refused decisions show in its status (sub-agent-holds.ts keeps its followers there). */
  run: RunState;
  /** The run's input (absent when it is not valid): where to report holds (`reportTo`), how long one waits, and what then. */
  input: RunInput | undefined;
  /** Checks a stand-in output against the tool's output schema; returns it parsed (may throw). */
  validateOutput: OutputCheck;
  /** Told, in order, of each thing that happens to one of the run's own holds (the metrics; the features' observers, Notify's notices among them). */
  observers?: HoldObserver[];
}

/** Pending holds of one run and the handlers that decide them. */
export class HoldBoard {
  private readonly entries = new Map<string, PendingHold>();
  private readonly decided = new Set<string>();
  private counter = 0;
  /** Set once the run is ending: no hold waits any more. */
  private stoppedBy: unknown = undefined;
  /** Decisions re-applied after a `workflow reset`, waiting for their holds. */
  private readonly reapplied: ReappliedDecisions;

  private readonly options: HoldBoardOptions;
  /** The decisions taken. */
  private readonly log: DecisionLog;
  /** The JSON Schema of each hold kind's decision, made when this run first raises the kind. */
  private readonly decisionSchemas = new Map<HoldKind, Record<string, unknown>>();
  /** Holds of the run's sub-agents, decided through this board. */
  private readonly nested: SubAgentHolds;
  /** Who may decide each hold (the agent's approver rules, votes). */
  private readonly guard: HoldGuard;

  constructor(options: HoldBoardOptions) {
    this.options = options;
    this.guard = new HoldGuard(options);
    this.log = new DecisionLog(options.run);
    this.reapplied = new ReappliedDecisions(options.run, { raised: () => this.counter, pending: (interruptId) => this.entries.get(interruptId)?.record });
    this.nested = new SubAgentHolds(options.run, options.input?.reportTo, () => this.changed());
    // Whether a decision may wait for its hold is decided by the validator, which runs only on
    // live delivery: the replayer runs a reset run under its original run id, so the handler
    // must not ask again.
    setHandler(resumeUpdate, (decision) => this.accept(decision, { mayAwaitHold: true, route: 'update' }), {
      // The validator holds a decision to what its hold's kind declares; the handler (which replays
      // updates a validator accepted, before that check existed too) takes what the validator let through.
      validator: (decision) => void this.check(decision, { mayAwaitHold: this.reapplied.resetRun, declared: true }),
      description:
        'Decides a held tool call: { interruptId, approved, reason? }, { interruptId, respond } or { interruptId, restart, input? }. Refused (with why) for an unknown, decided or malformed decision.',
    });
    setHandler(resumeSignal, (decision) => this.acceptSignal(decision), {
      description: 'The resume decision, fire-and-forget: a refused one is logged and shown in status.refusedDecision.',
    });
  }

  /** A decision sent by signal. Nobody waits for its answer: a refusal is logged and shown in `status`, in the order the signals came. */
  private async acceptSignal(decision: Decision): Promise<void> {
    const refuse = (error: unknown): void => {
      const reason = (error as Error).message;
      const interruptId = typeof (decision as { interruptId?: unknown } | null)?.interruptId === 'string' ? decision.interruptId : undefined;
      log.warn('refused a decision sent by signal', { interruptId, reason });
      this.options.run.status.refusedDecision = { ...(interruptId ? { interruptId } : {}), reason };
      recordRefusedSignal(this.options.run, 'resume', reason);
    };
    // Held to what the kind declares, as the update's validator holds it; one refused at once is recorded at once.
    try {
      this.check(decision, { mayAwaitHold: this.reapplied.resetRun, declared: true });
    } catch (error) {
      return refuse(error);
    }
    await this.accept(decision, { mayAwaitHold: this.reapplied.resetRun, route: 'signal', declared: true }).catch(refuse);
  }

  /** Holds waiting for a decision, oldest first: the run's own, then its sub-agents'. */
  pending(): Hold[] {
    return [...this.own(), ...this.nested.pending()];
  }

  private own(): Hold[] {
    return [...this.entries.values()].filter((entry) => entry.open).map((entry) => entry.record);
  }

  /** Forgets the holds of a sub-agent run that has settled. */
  forgetChild(childRunId: string): void {
    this.nested.forget(childRunId);
  }

  private tell(event: Parameters<HoldObserver>[0]): void {
    for (const observer of this.options.observers ?? []) observer(event);
  }

  /** The set of pending holds changed: tell the run and its parent. */
  private changed(): void {
    showHolds(this.options.run, this.pending());
    this.nested.reportToParent(this.pending());
  }

  /**
   * The turn is ending with `error` (a stop, an uncovered failure): every hold waiting now,
   * or raised until `waitAgain`, throws it instead of waiting for a decision that no longer
   * matters.
   */
  stopWaiting(error: unknown): void {
    this.stoppedBy ??= error;
  }

  /** Holds wait for decisions again (the turn that stopped them has settled). */
  waitAgain(): void {
    this.stoppedBy = undefined;
  }

  private decisionSchemaOf(hold: HoldKind): Record<string, unknown> {
    let schema = this.decisionSchemas.get(hold);
    if (!schema) this.decisionSchemas.set(hold, (schema = decisionJsonSchema(hold)));
    return schema;
  }

  /**
   * Records a hold and waits durably for its decision (or the timeout, or the run's stop), with
   * the held tool's output schema (what a stand-in output must match). Resolves to what the held
   * call gets.
   */
  async hold(interrupt: ToolInterrupt, request: ToolRequest, outputSchema?: Record<string, unknown>): Promise<Resumption> {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows, as caught, what stopped the run
    if (this.stoppedBy !== undefined) throw this.stoppedBy;
    const { input } = this.options;
    const id = `i${++this.counter}`;
    const entry = PendingHold.raise(interrupt, request, {
      id,
      decision: this.decisionSchemaOf(interrupt.hold),
      outputSchema,
      context: holdContext(this.options.run),
    });
    const timeoutMs = input?.interruptTimeout !== undefined ? durationMs(input.interruptTimeout) : undefined;
    entry.putToVote(this.guard.votesFor(entry.record, { raisedAt: entry.raisedAt, timeoutMs }));
    this.entries.set(id, entry);
    this.changed();
    this.tell({ type: 'hold.raised', at: entry.record.since!, hold: entry.record });
    try {
      const inTime = await entry.wait(
        input?.interruptTimeout,
        () => this.stoppedBy !== undefined,
        () => {
          this.changed();
          this.tell({ type: 'hold.escalated', at: new Date().toISOString(), hold: entry.record });
        },
      );
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows, as caught, what stopped the run
      if (entry.open && this.stoppedBy !== undefined) throw this.stoppedBy;
      if (!inTime) {
        const record = entry.expire(input);
        this.decided.add(id);
        this.log.add([record]);
      }
      const decision = this.log.latest(id);
      this.tell({ type: inTime ? 'hold.decided' : 'hold.expired', at: new Date().toISOString(), hold: entry.record, ...(decision ? { decision } : {}) });
      return entry.resumption!;
    } finally {
      this.entries.delete(id);
      this.changed();
    }
  }

  /** Keeps decision records for status and the result (the latest KEPT_DECISIONS); also those a resume took. */
  recordDecisions(records: DecisionRecord[]): void {
    this.log.add(records);
  }

  /** Decisions taken before this run of the chain (continue-as-new): kept on, and shown with the new ones. */
  restoreDecisions(records: readonly DecisionRecord[]): void {
    this.log.restore(records);
  }

  /**
   * Throws an ApplicationFailure saying what is wrong with a decision: malformed, for no pending
   * hold, already decided, for another call, or not what the hold's kind takes (checked against
   * its decision schema, once, here). Returns it parsed, with what the held call gets (absent
   * for a sub-agent's hold this worker has no kind for, and for a decision kept until its hold).
   */
  private check(
    raw: unknown,
    { mayAwaitHold = false, declared = false }: { mayAwaitHold?: boolean; declared?: boolean } = {},
  ): { decision: Decision; resumption?: Resumption } {
    const parsed = parseDecision(raw);
    if (!parsed.success) throw ApplicationFailure.create({ type: 'INVALID_ARGUMENT', nonRetryable: true, message: parsed.error });
    const decision = parsed.data;
    const { interruptId } = decision;
    if (SubAgentHolds.isNested(interruptId)) return this.nested.check(decision, () => this.own().map((record) => record.id), declared);
    const entry = this.entries.get(interruptId);
    if (this.decided.has(interruptId) || (entry && !entry.open)) {
      throw ApplicationFailure.create({ type: 'FAILED_PRECONDITION', nonRetryable: true, message: `hold ${interruptId} was already decided` });
    }
    if (!entry) {
      if (mayAwaitHold && this.reapplied.awaits(interruptId)) return { decision };
      throw unknownHold(
        interruptId,
        this.pending().map((record) => record.id),
      );
    }
    const mismatch = holdMismatch(decision, entry.record);
    if (mismatch) throw ApplicationFailure.create({ type: 'FAILED_PRECONDITION', nonRetryable: true, message: mismatch });
    // Thrown as is: the update's validator runs this too, and a validator changes nothing (a signal's refusal is shown by its handler).
    this.guard.check(decision, entry);
    return { decision, resumption: taken(entry.kind, entry.record, decision, declared) };
  }

  /** The run is ending: decisions re-applied after a reset that found no hold are dropped. */
  close(): void {
    this.reapplied.close();
  }

  /** Validates and records a decision (for a shared decision: on every pending hold of the same middleware). */
  private async accept(
    raw: Decision,
    { mayAwaitHold, route: via, declared = false }: { mayAwaitHold: boolean; route: 'update' | 'signal'; declared?: boolean },
  ): Promise<DecisionAccepted> {
    let { decision, resumption: value } = this.check(raw, { mayAwaitHold, declared });
    const route = this.nested.routeOf(decision, via);
    if (!SubAgentHolds.isNested(decision.interruptId) && !this.entries.has(decision.interruptId)) {
      await this.reapplied.keep(decision);
      ({ decision, resumption: value } = this.check(decision, { declared }));
    }
    if (SubAgentHolds.isNested(decision.interruptId)) {
      this.recordDecisions([await this.nested.forward(decision, value, route, this.options.validateOutput)]);
      return { interruptId: decision.interruptId, decided: [decision.interruptId] };
    }
    let entry = this.entries.get(decision.interruptId)!;
    const verified = await this.guard.admit(decision, entry);
    // Decided meanwhile by another handler (two decisions delivered in one workflow task both pass the validator)?
    ({ decision, resumption: value } = this.check(decision, { declared }));
    entry = this.entries.get(decision.interruptId)!;
    if (value && 'output' in value) {
      value = { output: await checkedOutput(this.options.validateOutput, entry.record.toolName ?? '', decision.interruptId, value.output) };
      this.check(decision, { declared }); // decided meanwhile by another handler?
    }
    if (!entry.counts(decision)) {
      // Counted, and more votes are needed: the hold waits on, showing who voted and who still may.
      this.changed();
      this.tell({ type: 'hold.voted', at: new Date().toISOString(), hold: entry.record });
      return { interruptId: decision.interruptId, decided: [], votes: entry.record.votes! };
    }
    // A shared decision takes another hold only when whoever decided may decide that one too (its approver rules); a hold put to a vote takes only its own votes.
    const mayTake = (other: PendingHold) => this.guard.mayShare(decision, verified, other);
    const targets =
      entry.kind.sharedDecision && !entry.votes
        ? [...this.entries.values()].filter((other) => other === entry || (other.record.raisedBy === entry.record.raisedBy && other.open && mayTake(other)))
        : [entry];
    const records = targets.map((target) => {
      // A replacement input belongs to the call it was sent for, never to the others it decides.
      const shared = target === entry || !('input' in decision) ? decision : { ...decision, input: undefined };
      const record =
        target === entry
          ? target.decideBy(decision, value!, route, { verified })
          : target.decideBy(shared, taken(target.kind, target.record, shared, declared), route, { verified, sharedWith: entry.record.id });
      this.decided.add(target.record.id);
      return record;
    });
    this.recordDecisions(records);
    return { interruptId: decision.interruptId, decided: targets.map((target) => target.record.id) };
  }
}
