/**
 * Steering a run under way (docs/steering.md): the `steer` update adds a user message that the
 * run's next model call takes, in the order the messages came, each once (by update id, also
 * across continue-as-new); with `interrupt` the model call in flight is cancelled and made again
 * with the message. Tool calls are never cancelled for it. The records `status.steering` lists
 * live in the run's status, and the ids taken in the run's state, so both are carried through
 * continue-as-new. Runs in the workflow: deterministic, no I/O.
 */
import { ApplicationFailure, CancellationScope, currentUpdateInfo, isCancellation, setHandler } from '@temporalio/workflow';
import type { Message } from '../core/messages';
import { KEPT_STEERS, STEER_METADATA_KEY, SteerInputSchema, steerInputProblem, type SteerRecord } from '../core/steering';
import { steerUpdate } from '../core/protocol';
import type { RunState } from './run-state';

function refusal(type: 'INVALID_ARGUMENT' | 'FAILED_PRECONDITION', message: string): ApplicationFailure {
  return ApplicationFailure.create({ type, nonRetryable: true, message });
}

/** The steering messages of one run: the update that adds them, and the model call that takes them. */
export class Steering {
  private readonly run: RunState;
  /** Set once the run has finished its loop (or is ending): why, as the refusal says it. */
  private closed: string | undefined;
  /** The scope of the model-call stage in flight (middleware and all): set while a model call's stage runs. */
  private inFlight: CancellationScope | undefined;
  /** The scope of the model activity in flight, which an interrupting steer cancels. */
  private activity: CancellationScope | undefined;
  /** The messages the model activity of the stage in flight took after the stage began (they came during a hold). */
  private lateTaken: Message[] = [];
  /** Set when a steer cancelled the model call in flight. */
  private interrupted = false;

  constructor(run: RunState) {
    this.run = run;
    setHandler(steerUpdate, (input) => this.accept(input), {
      validator: (input) => this.check(input),
      description:
        'Adds a user message to the run, taken at its next model call: { text, interrupt? } (interrupt: cancel the model call in flight and call again with it). Idempotent by update id. Refused for an empty text or a run that has finished its loop.',
    });
  }

  private get records(): SteerRecord[] {
    return this.run.status.steering ?? [];
  }

  private set records(records: SteerRecord[]) {
    this.run.status.steering = records;
  }

  /** Refuses a malformed steer, or one for a run that has finished its loop (a steer sent before with this id is answered again). */
  private check(input: unknown): void {
    const problem = steerInputProblem(input);
    if (problem) throw refusal('INVALID_ARGUMENT', problem);
    if (this.known(currentUpdateInfo()?.id)) return;
    const ended = this.endedWhy();
    if (ended) throw refusal('FAILED_PRECONDITION', `run "${this.run.runId}" ${ended}; it takes no more steering`);
  }

  private known(id: string | undefined): boolean {
    return id !== undefined && this.run.steerIds?.[id] !== undefined;
  }

  private endedWhy(): string | undefined {
    const { state } = this.run.status;
    return state === 'running' || state === 'waiting' ? this.closed : `has ended (${state})`;
  }

  /** Records a steer (once per update id) and, with `interrupt`, cancels the model call in flight. */
  private accept(raw: unknown): SteerRecord {
    // The validator does not run on replay: the handler checks again, and refuses the same way.
    this.check(raw);
    const input = SteerInputSchema.parse(raw);
    const id = currentUpdateInfo()?.id ?? `steer-${Object.keys(this.run.steerIds ?? {}).length + 1}`;
    if (this.known(id)) return this.recordOf(id, input.text);
    const record: SteerRecord = { id, text: input.text, state: 'pending', ...(input.interrupt ? { interrupt: true } : {}), at: new Date().toISOString() };
    this.run.steerIds = { ...this.run.steerIds, [id]: 'pending' };
    this.records = trimmed([...this.records, record]);
    if (input.interrupt && this.inFlight && !this.interrupted) {
      // Only the model activity is cancelled, never a hold the stage waits on (the message is
      // then taken by the activity made once the hold is decided).
      const scope = this.activity;
      if (scope) {
        this.interrupted = true;
        record.cancelledModelCall = true;
        scope.cancel();
      }
    }
    return { ...record };
  }

  /** What a steer sent again is answered: its record, or (no longer kept) what the run knows of it. */
  private recordOf(id: string, text: string): SteerRecord {
    const kept = this.records.find((record) => record.id === id);
    if (kept) return { ...kept };
    return { id, text, state: this.run.steerIds![id]!, at: '', reason: 'accepted before; its record is no longer kept (status.steering keeps the latest 100)' };
  }

  /** True while a steering message waits for the next model call. */
  hasPending(): boolean {
    return this.records.some((record) => record.state === 'pending');
  }

  /** The pending messages, as user messages in the order they came, now marked as taken by the current turn. */
  private take(): Message[] {
    const pending = this.records.filter((record) => record.state === 'pending');
    if (pending.length === 0) return [];
    const at = new Date().toISOString();
    const ids = { ...this.run.steerIds };
    this.records = this.records.map((record) => {
      if (record.state !== 'pending') return record;
      ids[record.id] = 'applied';
      return { ...record, state: 'applied', turn: this.run.status.turn, appliedAt: at };
    });
    this.run.steerIds = ids;
    return pending.map((record) => ({ role: 'user', content: [{ text: record.text }], metadata: { [STEER_METADATA_KEY]: { id: record.id } } }));
  }

  /**
   * Makes the turn's model call with the pending steering messages added to `messages`; when an
   * interrupting steer cancels it, makes it again with that message too. Resolves to the answer
   * and the messages it was sent.
   */
  async callModel<T>(messages: Message[], call: (messages: Message[]) => Promise<T>): Promise<{ response: T; messages: Message[] }> {
    for (;;) {
      const taken = this.take();
      const sent = taken.length ? [...messages, ...taken] : messages;
      const scope = new CancellationScope({ cancellable: true });
      this.inFlight = scope;
      this.lateTaken = [];
      try {
        const response = await scope.run(() => call(sent));
        return { response, messages: this.lateTaken.length ? [...sent, ...this.lateTaken] : sent };
      } catch (error) {
        // Only a cancellation that a steer made is taken back; the run's own cancellation goes on.
        if (!this.interrupted || !isCancellation(error) || CancellationScope.current().consideredCancelled) throw error;
        messages = this.lateTaken.length ? [...sent, ...this.lateTaken] : sent;
      } finally {
        this.inFlight = undefined;
        this.activity = undefined;
        this.lateTaken = [];
        this.interrupted = false;
      }
    }
  }

  /**
   * Runs the model activity of the stage in flight (the innermost step of the model-call stage,
   * `request` being the messages the middleware hands it): messages that came since the stage
   * began (while a hold in it waited) are added to its end, and an interrupting steer cancels
   * this activity only. Outside `callModel`, just runs it.
   */
  async modelActivity<R>(request: Message[], run: (messages: Message[]) => Promise<R>): Promise<R> {
    if (!this.inFlight) return run(request);
    let messages = request;
    if (this.hasPending()) {
      const late = this.take();
      this.lateTaken = [...this.lateTaken, ...late];
      messages = [...request, ...late];
    }
    const scope = new CancellationScope({ cancellable: true });
    this.activity = scope;
    try {
      return await scope.run(() => run(messages));
    } finally {
      if (this.activity === scope) this.activity = undefined;
    }
  }

  /**
   * The run has finished its loop (or is ending): steers are refused from now on, with `why`, and
   * any still pending are dropped.
   */
  close(why: string): void {
    if (this.closed) return;
    this.closed = why;
    if (!this.hasPending()) return;
    const ids = { ...this.run.steerIds };
    this.records = this.records.map((record) => {
      if (record.state !== 'pending') return record;
      ids[record.id] = 'dropped';
      return { ...record, state: 'dropped', reason: `the run ${why} before its next model call` };
    });
    this.run.steerIds = ids;
  }
}

/** The latest KEPT_STEERS records, never dropping one still pending. */
function trimmed(records: SteerRecord[]): SteerRecord[] {
  let excess = records.length - KEPT_STEERS;
  return excess <= 0 ? records : records.filter((record) => record.state === 'pending' || excess-- <= 0);
}
