/**
 * One hold of a run, as a small state machine: raised (its record made, put to a vote when its
 * rule counts votes), waiting (escalated once when its rule says), then decided or expired. The
 * board (hold-board.ts) keeps the run's holds and takes decisions; this says what one hold is and
 * how it waits. Also what a decision hands a held call, and the check of a stand-in output.
 * Runs in the workflow: deterministic, no I/O.
 */
import { ApplicationFailure, condition } from '@temporalio/workflow';
import { durationMs } from '../core/duration';
import { KeelError } from '../core/errors';
import { decisionRecord, resumption, type Decision, type DecisionRecord, type DecisionRoute, type HoldKind, type Resumption } from '../core/holds';
import type { ToolInterrupt } from '../core/interrupts';
import type { ToolRequest } from '../core/messages';
import type { Hold, RunInput } from '../core/run';
import type { GuardedHold } from './hold-guard';
import type { HoldVotesBox } from './hold-votes';

/** Where a hold is in its life. */
export type HoldState = 'waiting' | 'escalated' | 'decided' | 'expired';

/** What raising a hold needs besides the interrupt and the held call. */
export interface RaiseOptions {
  id: string;
  /** The JSON Schema of the kind's decision (made once per kind by the board). */
  decision: Record<string, unknown>;
  /** The held tool's output schema: what a stand-in output must match. */
  outputSchema?: Record<string, unknown> | undefined;
  /** Where in the run it was raised (run-status.ts, holdContext). */
  context: Partial<Hold>;
}

/** One raised hold of the run. */
export class PendingHold implements GuardedHold {
  state: HoldState = 'waiting';
  /** Set once decided: what the held call gets. */
  resumption?: Resumption;
  votes?: HoldVotesBox | undefined;
  readonly raisedAt = Date.now();

  private constructor(
    readonly record: Hold,
    /** The kind of hold, as the raising stage declared it. */
    readonly kind: HoldKind,
  ) {}

  /** The hold a stage's interrupt raises on a call; its data kept as the stage gave it. */
  static raise(interrupt: ToolInterrupt, request: ToolRequest, { id, decision, outputSchema, context }: RaiseOptions): PendingHold {
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
      decision,
      respond: hold.respond ?? 'answer',
      ...(outputSchema !== undefined ? { outputSchema } : {}),
      since: new Date().toISOString(),
      ...context,
    };
    return new PendingHold(record, hold);
  }

  get open(): boolean {
    return this.state === 'waiting' || this.state === 'escalated';
  }

  /** Puts the hold to its votes (its rule counts them). */
  putToVote(votes: HoldVotesBox | undefined): void {
    this.votes = votes;
    if (votes) this.record.votes = votes.view();
  }

  /** Counts a vote when the hold is put to one: false while more votes are needed (its record shows who voted and who still may). */
  counts(decision: Decision): boolean {
    if (!this.votes) return true;
    const outcome = this.votes.vote(decision as Extract<Decision, { approved: boolean }>, new Date());
    this.record.votes = this.votes.view();
    return outcome !== undefined;
  }

  /** Decided by `decision` (its decider `verified` or not, on this hold or `sharedWith` another): the held call gets `value`; returns the decision's record. */
  decideBy(decision: Decision, value: Resumption, route: DecisionRoute, { verified, sharedWith }: { verified: boolean; sharedWith?: string }): DecisionRecord {
    this.resumption = value;
    this.state = 'decided';
    return {
      ...decisionRecord(this.record, decision, route, sharedWith !== undefined ? { sharedWith } : {}),
      ...(verified ? { verified: true } : {}),
      ...(this.votes ? { votes: this.votes.votes() } : {}),
    };
  }

  /**
   * Waits durably until it is decided or `stopped()` says the run ends, or its timeout passes:
   * true when it settled in time. A hold put to a vote may escalate first (`onEscalate`), then waits
   * what is left of its timeout. A wait with no deadline records no timer (the Web UI showed one as
   * a wait of "9 years, 11 months"); the run's current details say what it waits for.
   */
  async wait(timeout: RunInput['interruptTimeout'], stopped: () => boolean, onEscalate: () => void): Promise<boolean> {
    const settled = () => !this.open || stopped();
    const escalateMs = this.votes?.escalateMs;
    if (escalateMs !== undefined && !(await condition(settled, escalateMs))) {
      this.votes!.escalate();
      this.record.votes = this.votes!.view();
      this.state = 'escalated';
      onEscalate();
    }
    if (timeout === undefined) return (await condition(settled), true);
    return condition(settled, escalateMs === undefined ? timeout : Math.max(1, durationMs(timeout)! - (Date.now() - this.raisedAt)));
  }

  /** Nobody decided in time: a denial (with its record, the timeout's), or DEADLINE_EXCEEDED thrown when the run fails on it or the kind cannot be denied. */
  expire(input: RunInput | undefined): DecisionRecord {
    const { id, toolName } = this.record;
    const waited = `${String(input?.interruptTimeout)}${this.votes ? ` (${this.votes.summary()})` : ''}`;
    const fail = (why = '') => new KeelError('DEADLINE_EXCEEDED', `hold ${id} on tool "${toolName}" got no decision within ${waited}${why}`);
    if (input?.onInterruptTimeout === 'fail') throw fail();
    const denial = { approved: false, reason: `no decision within ${waited}` };
    const taken = resumption(this.kind, denial);
    // A kind whose decisions cannot say no (no `{ approved: false }`): the run cannot go on without one.
    if (!taken.success) throw fail(`, and a ${this.kind.kind} hold cannot be denied (${taken.error})`);
    this.resumption = taken.value;
    this.state = 'expired';
    return { ...decisionRecord(this.record, { ...denial, decidedBy: 'keel (timeout)' }, 'timeout'), ...(this.votes ? { votes: this.votes.votes() } : {}) };
  }
}

/** What a decision on `record` (a hold of kind `hold`) hands the held call; an ApplicationFailure naming the field when the kind does not take it. */
export function taken(hold: HoldKind, record: Hold, decision: Decision, declared: boolean): Resumption {
  const result = resumption(hold, decision, { declared });
  if (result.success) return result.value;
  const what = `${record.kind} hold${record.toolName ? ` on tool "${record.toolName}"` : ''}`;
  throw ApplicationFailure.create({
    type: 'INVALID_ARGUMENT',
    nonRetryable: true,
    message: `the decision for hold ${record.id} (a ${what}) is not one it takes: ${result.error}`,
  });
}

/** The refusal of a decision for a hold that is not pending, naming those that are. */
export function unknownHold(interruptId: string, pending: readonly string[]): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'NOT_FOUND',
    nonRetryable: true,
    message: `unknown hold id "${interruptId}"; pending holds: ${pending.length ? pending.join(', ') : '(none)'}`,
  });
}

/** Checks a stand-in output against the tool's output schema; returns it parsed (may throw). */
export type OutputCheck = (toolName: string, output: unknown) => Promise<unknown>;

/** A stand-in output checked by `validate`; an ApplicationFailure naming the field when it fails. */
export async function checkedOutput(validate: OutputCheck, toolName: string, interruptId: string, output: unknown): Promise<unknown> {
  try {
    return await validate(toolName, output);
  } catch (error) {
    const failure = KeelError.isInstance(error)
      ? error
      : new KeelError('INVALID_ARGUMENT', String((error as { message?: unknown } | undefined)?.message ?? error));
    throw ApplicationFailure.create({ type: failure.status, nonRetryable: true, message: `respond for hold ${interruptId}: ${failure.message}` });
  }
}
