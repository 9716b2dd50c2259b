/**
 * The run's pending holds: records holds, answers the `resume` update (validated
 * synchronously) and signal, and lets a held call wait durably for its decision. A hold's
 * policy (declared by the middleware that raised it) says whether one decision answers all
 * of that middleware's holds and whether a stand-in output answers the call or goes to the
 * stage to decide. Runs in the workflow: deterministic, no I/O.
 */
import type { HoldEvent } from '../core/hold-notices';
import { durationMs } from '../core/duration';
import { HoldGuard, type GuardedHold, type HoldGuardOptions } from './hold-guard';
import { ApplicationFailure, condition, log, setHandler, workflowInfo } from '@temporalio/workflow';
import { KeelError } from '../core/errors';
import type { ToolInterrupt } from '../core/interrupts';
import {
  KEPT_DECISIONS,
  decisionJsonSchema,
  decisionRecord,
  holdMismatch,
  parseDecision,
  resumption,
  type Decision,
  type DecisionAccepted,
  type DecisionRecord,
  type DecisionRoute,
  type HoldKind,
  type Resumption,
} from '../core/holds';
import type { ToolRequest } from '../core/messages';
import type { Hold, RunInput } from '../core/run';
import { resumeSignal, resumeUpdate } from '../core/protocol';
import { registeredHoldKind } from '../features/catalog';
import { ReappliedDecisions } from './reapplied-decisions';
import { SubAgentHolds } from './sub-agent-holds';
import { holdContext, recordRefusedSignal, showHolds } from './run-status';
import type { RunState } from './run-state';

interface Entry extends GuardedHold {
  /** The kind of hold, as the raising stage declared it. */
  hold: HoldKind;
  /** Set once decided: what the held call gets. */
  resumption?: Resumption;
}

/** Told when one of the run's own holds is raised, voted on, escalated, decided or expires. */
export type HoldObserver = (event: HoldEvent) => void;

/** Options of the board. */
export interface HoldBoardOptions extends HoldGuardOptions {
  /** The run's state: its holds, decisions and refused decisions show in its status (sub-agent-holds.ts keeps its followers there). */
  run: RunState;
  /** The run's input (absent when it is not valid): where to report holds (`reportTo`), how long one waits, and what then. */
  input: RunInput | undefined;
  /** Checks a stand-in output against the tool's output schema; returns it parsed (may throw). */
  validateOutput: (toolName: string, output: unknown) => Promise<unknown>;
  /** Told, in order, of each thing that happens to one of the run's own holds (the metrics, hold notices: src/workflows/hold-notices.ts). */
  observers?: HoldObserver[];
}

/** Pending holds of one run and the handlers that decide them. */
export class HoldBoard {
  private readonly entries = new Map<string, Entry>();
  private readonly decided = new Set<string>();
  private counter = 0;
  /** Set once the run is ending: no hold waits any more. */
  private stoppedBy: unknown = undefined;
  /** Decisions re-applied after a `workflow reset`, waiting for their holds. */
  private readonly reapplied: ReappliedDecisions;

  private readonly options: HoldBoardOptions;
  /** The decisions taken, oldest first (the latest KEPT_DECISIONS). */
  private readonly records: DecisionRecord[] = [];
  /** The JSON Schema of each hold kind's decision, made when this run first raises the kind. */
  private readonly decisionSchemas = new Map<HoldKind, Record<string, unknown>>();
  /** Holds of the run's sub-agents, decided through this board. */
  private readonly nested: SubAgentHolds;
  /** Who may decide each hold (the agent's approver rules, votes). */
  private readonly guard: HoldGuard;

  constructor(options: HoldBoardOptions) {
    this.options = options;
    this.guard = new HoldGuard(options);
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
    setHandler(
      resumeSignal,
      async (decision) => {
        // Nobody waits for a signal's answer: the refusal is logged and shown in `status`.
        const refuse = (error: unknown): void => {
          const reason = (error as Error).message;
          const interruptId =
            typeof (decision as { interruptId?: unknown } | null)?.interruptId === 'string' ? (decision as { interruptId: string }).interruptId : undefined;
          log.warn('refused a decision sent by signal', { interruptId, reason });
          this.options.run.status.refusedDecision = { ...(interruptId ? { interruptId } : {}), reason };
          recordRefusedSignal(this.options.run, 'resume', reason);
        };
        // Held to what the kind declares, as the update's validator holds it. A decision refused at
        // once is recorded at once, so refusals show in the order the signals arrived.
        try {
          this.check(decision, { mayAwaitHold: this.reapplied.resetRun, declared: true });
        } catch (error) {
          return refuse(error);
        }
        try {
          await this.accept(decision, { mayAwaitHold: this.reapplied.resetRun, route: 'signal', declared: true });
        } catch (error) {
          refuse(error);
        }
      },
      { description: 'The resume decision, fire-and-forget: a refused one is logged and shown in status.refusedDecision.' },
    );
  }

  /** Holds waiting for a decision, oldest first: the run's own, then its sub-agents'. */
  pending(): Hold[] {
    return [...this.own(), ...this.nested.pending()];
  }

  private own(): Hold[] {
    return [...this.entries.values()].filter((entry) => !entry.resumption).map((entry) => entry.record);
  }

  /** Forgets the holds of a sub-agent run that has settled. */
  forgetChild(childRunId: string): void {
    this.nested.forget(childRunId);
  }

  private tell(event: HoldEvent): void {
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
   * Records a hold and waits durably for its decision (or the timeout, or the run's stop); the
   * hold's data is kept as the stage gave it, with the held tool's output schema (what a
   * stand-in output must match). Resolves to what the held call gets.
   */
  async hold(interrupt: ToolInterrupt, request: ToolRequest, outputSchema?: Record<string, unknown>): Promise<Resumption> {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows, as caught, what stopped the run
    if (this.stoppedBy !== undefined) throw this.stoppedBy;
    const id = `i${++this.counter}`;
    const { hold } = interrupt;
    const question = hold.question(interrupt.data, { toolName: request.name });
    const record: Hold = {
      id,
      kind: hold.kind,
      question,
      toolName: request.name,
      input: request.input ?? {},
      ...(request.ref !== undefined ? { ref: request.ref } : {}),
      message: question,
      raisedBy: interrupt.raisedBy,
      ...(Object.keys(interrupt.data).length ? { data: interrupt.data } : {}),
      decision: this.decisionSchemaOf(hold),
      respond: hold.respond ?? 'answer',
      ...(outputSchema !== undefined ? { outputSchema } : {}),
      since: new Date().toISOString(),
      ...holdContext(this.options.run),
    };
    const entry: Entry = { record, hold };
    const raisedAt = Date.now();
    const timeout = this.options.input?.interruptTimeout;
    entry.votes = this.guard.votesFor(record, { raisedAt, timeoutMs: timeout !== undefined ? durationMs(timeout) : undefined });
    if (entry.votes) record.votes = entry.votes.view();
    this.entries.set(id, entry);
    this.changed();
    this.tell({ type: 'hold.raised', at: record.since!, hold: record });
    try {
      const settled = () => entry.resumption !== undefined || this.stoppedBy !== undefined;
      let settledInTime: boolean;
      // A hold put to a vote may escalate first: then it waits what is left of its timeout.
      const escalateMs = entry.votes?.escalateMs;
      if (escalateMs !== undefined && !(await condition(settled, escalateMs))) this.escalate(entry);
      // A wait with no deadline records no timer (the Web UI showed one as a wait of "9 years, 11
      // months"); the run's current details say what it waits for.
      if (timeout !== undefined)
        settledInTime = await condition(settled, escalateMs === undefined ? timeout : Math.max(1, durationMs(timeout)! - (Date.now() - raisedAt)));
      else settledInTime = (await condition(settled), true);
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows, as caught, what stopped the run
      if (entry.resumption === undefined && this.stoppedBy !== undefined) throw this.stoppedBy;
      if (!settledInTime) entry.resumption = this.timedOut(entry);
      const decision = [...this.records].reverse().find((taken) => taken.interruptId === id);
      this.tell({
        type: settledInTime ? 'hold.decided' : 'hold.expired',
        at: new Date().toISOString(),
        hold: record,
        ...(decision ? { decision } : {}),
      });
      return entry.resumption!;
    } finally {
      this.entries.delete(id);
      this.changed();
    }
  }

  /** No decision came in time: the hold is put to whom its rule escalates to as well, and says so (status, a notice). */
  private escalate(entry: Entry): void {
    entry.votes!.escalate();
    entry.record.votes = entry.votes!.view();
    this.changed();
    this.tell({ type: 'hold.escalated', at: new Date().toISOString(), hold: entry.record });
  }

  /** A hold nobody decided in time: a denial (recorded as the timeout's), or the run failing DEADLINE_EXCEEDED. */
  private timedOut(entry: Entry): Resumption {
    const { id, toolName } = entry.record;
    const waited = `${String(this.options.input?.interruptTimeout)}${entry.votes ? ` (${entry.votes.summary()})` : ''}`;
    const fail = (why = '') => new KeelError('DEADLINE_EXCEEDED', `hold ${id} on tool "${toolName}" got no decision within ${waited}${why}`);
    if (this.options.input?.onInterruptTimeout === 'fail') throw fail();
    const denial = { approved: false, reason: `no decision within ${waited}` };
    const taken = resumption(entry.hold, denial);
    // A kind whose decisions cannot say no (no `{ approved: false }`): the run cannot go on without one.
    if (!taken.success) throw fail(`, and a ${entry.hold.kind} hold cannot be denied (${taken.error})`);
    this.decided.add(id);
    this.recordDecisions([
      { ...decisionRecord(entry.record, { ...denial, decidedBy: 'keel (timeout)' }, 'timeout'), ...(entry.votes ? { votes: entry.votes.votes() } : {}) },
    ]);
    return taken.value;
  }

  /** Keeps decision records for status and the result (the latest KEPT_DECISIONS); also those a resume took. */
  recordDecisions(records: DecisionRecord[]): void {
    this.records.push(...records);
    if (this.records.length > KEPT_DECISIONS) this.records.splice(0, this.records.length - KEPT_DECISIONS);
    this.options.run.status.decisions = [...this.records];
  }

  /** Decisions taken before this run of the chain (continue-as-new): kept on, and shown with the new ones. */
  restoreDecisions(records: readonly DecisionRecord[]): void {
    this.records.splice(0, this.records.length, ...records.slice(-KEPT_DECISIONS));
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
    if (SubAgentHolds.isNested(interruptId)) {
      this.nested.check(
        interruptId,
        this.own().map((record) => record.id),
      );
      const held = this.nested.find(interruptId)!;
      const hold = held.raisedBy !== undefined ? registeredHoldKind(held.raisedBy, held.kind) : undefined;
      return hold ? { decision, resumption: taken(hold, held, decision, declared) } : { decision };
    }
    const entry = this.entries.get(interruptId);
    if (this.decided.has(interruptId) || entry?.resumption) {
      throw ApplicationFailure.create({ type: 'FAILED_PRECONDITION', nonRetryable: true, message: `hold ${interruptId} was already decided` });
    }
    if (!entry) {
      if (mayAwaitHold && this.reapplied.awaits(interruptId)) return { decision };
      const pending = this.pending().map((record) => record.id);
      throw ApplicationFailure.create({
        type: 'NOT_FOUND',
        nonRetryable: true,
        message: `unknown hold id "${interruptId}"; pending holds: ${pending.length ? pending.join(', ') : '(none)'}`,
      });
    }
    const mismatch = holdMismatch(decision, entry.record);
    if (mismatch) throw ApplicationFailure.create({ type: 'FAILED_PRECONDITION', nonRetryable: true, message: mismatch });
    // Thrown as is: the update's validator runs this too, and a validator changes nothing (a signal's refusal is shown by its handler).
    this.guard.check(decision, entry);
    return { decision, resumption: taken(entry.hold, entry.record, decision, declared) };
  }

  /** A stand-in output checked against the tool's output schema; an ApplicationFailure naming the field when it fails. */
  private async checkedOutput(toolName: string, interruptId: string, output: unknown): Promise<unknown> {
    try {
      return await this.options.validateOutput(toolName, output);
    } catch (error) {
      const failure = KeelError.isInstance(error)
        ? error
        : new KeelError('INVALID_ARGUMENT', String((error as { message?: unknown } | undefined)?.message ?? error));
      throw ApplicationFailure.create({
        type: failure.status,
        nonRetryable: true,
        message: `respond for hold ${interruptId}: ${failure.message}`,
      });
    }
  }

  /** The run is ending: decisions re-applied after a reset that found no hold are dropped. */
  close(): void {
    this.reapplied.close();
  }

  /** The route a decision took: a signal that says it was forwarded counts as such only from a run this one reports its holds to. */
  private routeOf(decision: Decision, route: 'update' | 'signal'): DecisionRoute {
    if (route !== 'signal' || decision.forwardedFrom === undefined) return route;
    const above = [
      this.options.input?.reportTo?.runId ?? workflowInfo().parent?.workflowId,
      ...(this.options.run.followers ?? []).map((follower) => follower.runId),
    ];
    return above.includes(decision.forwardedFrom) ? 'forwarded' : 'signal';
  }

  /** Validates and records a decision (for a shared decision: on every pending hold of the same middleware). */
  private async accept(
    raw: Decision,
    { mayAwaitHold, route: via, declared = false }: { mayAwaitHold: boolean; route: 'update' | 'signal'; declared?: boolean },
  ): Promise<DecisionAccepted> {
    let { decision, resumption: value } = this.check(raw, { mayAwaitHold, declared });
    const route = this.routeOf(decision, via);
    if (!SubAgentHolds.isNested(decision.interruptId) && !this.entries.has(decision.interruptId)) {
      await this.reapplied.keep(decision);
      ({ decision, resumption: value } = this.check(decision, { declared }));
    }
    if (SubAgentHolds.isNested(decision.interruptId)) return this.forward(decision, value, route);
    let entry = this.entries.get(decision.interruptId)!;
    const verified = await this.guard.admit(decision, entry);
    // Decided meanwhile by another handler (two decisions delivered in one workflow task both pass the validator)?
    ({ decision, resumption: value } = this.check(decision, { declared }));
    entry = this.entries.get(decision.interruptId)!;
    if (value && 'output' in value) {
      value = { output: await this.checkedOutput(entry.record.toolName ?? '', decision.interruptId, value.output) };
      this.check(decision, { declared }); // decided meanwhile by another handler?
    }
    if (entry.votes) {
      const votes = entry.votes;
      const outcome = votes.vote(decision as Extract<Decision, { approved: boolean }>, new Date());
      entry.record.votes = votes.view();
      if (outcome === undefined) {
        // Counted, and more votes are needed: the hold waits on, showing who voted and who still may.
        this.changed();
        this.tell({ type: 'hold.voted', at: new Date().toISOString(), hold: entry.record });
        return { interruptId: decision.interruptId, decided: [], votes: entry.record.votes };
      }
    }
    // A shared decision takes another hold only when whoever decided may decide that one too (its approver rules); a hold put to a vote takes only its own votes.
    const mayTake = (other: Entry) => this.guard.mayShare(decision, verified, other);
    const targets =
      entry.hold.sharedDecision && !entry.votes
        ? [...this.entries.values()].filter(
            (other) => other === entry || (other.record.raisedBy === entry.record.raisedBy && !other.resumption && mayTake(other)),
          )
        : [entry];
    const records: DecisionRecord[] = [];
    for (const target of targets) {
      // A replacement input belongs to the call it was sent for, never to the others it decides.
      const shared = target === entry || !('input' in decision) ? decision : { ...decision, input: undefined };
      target.resumption = target === entry ? value! : taken(target.hold, target.record, shared, declared);
      this.decided.add(target.record.id);
      records.push({
        ...decisionRecord(target.record, shared, route, target === entry ? {} : { sharedWith: entry.record.id }),
        ...(verified ? { verified: true } : {}),
        ...(target.votes ? { votes: target.votes.votes() } : {}),
      });
    }
    this.recordDecisions(records);
    return { interruptId: decision.interruptId, decided: targets.map((target) => target.record.id) };
  }

  /**
   * Sends a decision on a sub-agent's hold to the run holding it, where it is taken like any
   * other (and recorded as forwarded from here). A stand-in output is checked here, so the
   * sub-agent run never has to refuse (and drop) it.
   */
  private async forward(decision: Decision, value: Resumption | undefined, route: DecisionRoute): Promise<DecisionAccepted> {
    const held = this.nested.find(decision.interruptId)!;
    if ('respond' in decision && held.toolName && held.respond !== 'decide' && (value === undefined || 'output' in value)) {
      const respond = decision.respond;
      // A tool this worker does not know (a sub-agent's own workflow-local tool) is left to the sub-agent to check.
      const checked = await this.checkedOutput(held.toolName, decision.interruptId, respond).catch((error: unknown) => {
        if (error instanceof ApplicationFailure && error.type === 'NOT_FOUND') return respond;
        throw error;
      });
      decision = { ...decision, respond: checked };
    }
    await this.nested.forward({ ...decision, forwardedFrom: this.options.run.runId });
    this.recordDecisions([decisionRecord(held, decision, route)]);
    return { interruptId: decision.interruptId, decided: [decision.interruptId] };
  }
}

/** What a decision on `record` (a hold of kind `hold`) hands the held call; an ApplicationFailure naming the field when the kind does not take it. */
function taken(hold: HoldKind, record: Hold, decision: Decision, declared: boolean): Resumption {
  const result = resumption(hold, decision, { declared });
  if (result.success) return result.value;
  const what = `${record.kind} hold${record.toolName ? ` on tool "${record.toolName}"` : ''}`;
  throw ApplicationFailure.create({
    type: 'INVALID_ARGUMENT',
    nonRetryable: true,
    message: `the decision for hold ${record.id} (a ${what}) is not one it takes: ${result.error}`,
  });
}
