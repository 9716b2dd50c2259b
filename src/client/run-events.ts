/**
 * A run's events as they happen, for a client to show: text as the model writes it (from the
 * model call's heartbeat, see STREAM_DETAILS), each new message, tool calls and results, the
 * worker running each tool call, holds, and the end. Polls Temporal (describe for the streamed
 * text and the pending tool calls, the `status` and `messages` queries), so nothing is added to
 * the run's history. What one watcher costs is bounded: the queries (which a worker answers) are
 * sent only when describe shows the history moved, and while nothing moves (a run waiting for a
 * decision) the polls slow down to one describe per `maxIntervalMs`. Text is never shown twice:
 * a retried model call streams again from its start, and only what goes beyond what was
 * already shown comes out; a model message the stream is no part of (a session's history, read
 * after the turn's call began) leaves its text be. Node side.
 */
import { messageText, STREAM_DETAILS, type Message, type StreamedText } from '../core/messages';
import type { Hold, RunLifecycle, RunStatus } from '../core/run';
import type { TaskView } from '../core/tasks';
import type { ToolAttempt } from './tool-attempts';

/** What a run's workers are doing now (`RunHandle.inFlight()`). */
export interface InFlight {
  /** The text the model call under way has streamed so far, if one streams. */
  text?: StreamedText;
  /** Each tool call under way, with the worker running its current attempt. */
  tools: ToolAttempt[];
  /**
   * Where the run's history is: `<temporal run id>/<events>`. While it stays the same, the run's
   * state (its status, its messages) has not changed.
   */
  history?: string;
}

/** What `runEvents` reads of a run: a `RunHandle` is one. */
export interface RunEventSource {
  result(options: { signal?: AbortSignal }): Promise<unknown>;
  inFlight(): Promise<InFlight>;
  status(): Promise<RunStatus>;
  reportedStatus(): Promise<RunStatus>;
  messages(from?: number): Promise<Message[]>;
  tasks(): Promise<TaskView[]>;
}

/** One event of a run. */
export type RunEvent =
  /** Text of the model's answer: streamed while the call goes on (`final: false`), or the rest of it when the answer lands. */
  | { type: 'text'; delta: string; final: boolean; model?: string; callIndex?: number; attempt?: number; sequence?: number }
  /** A new message of the conversation, at its index. */
  | { type: 'message'; index: number; message: Message }
  | { type: 'toolCall'; name: string; ref?: string; input: unknown }
  | { type: 'toolResult'; name: string; ref?: string; output: unknown }
  /**
   * A tool call's attempt started on a worker (`worker`: its identity, `<pid>@<host>`): said once
   * per attempt, so a call retried on another worker after its worker died is said again. Seen
   * in the run's pending activities, so a call that starts and ends between two polls is not.
   */
  | { type: 'toolAttempt'; name: string; ref?: string; attempt: number; worker: string }
  /** A hold waiting for a decision. */
  | { type: 'hold'; interrupt: Hold }
  /** A background task (sub-agent run) started or changed status. */
  | { type: 'task'; task: TaskView }
  /** The run ended (the last event). */
  | { type: 'end'; state: RunLifecycle };

/** How often background tasks are looked at (each look queries every task's run). */
const TASKS_INTERVAL_MS = 1000;

/** Options of `runEvents`. */
export interface RunEventsOptions {
  /** Time between polls while the run moves (default 150 ms). */
  intervalMs?: number;
  /** Longest time between polls while nothing moves: each quiet poll doubles the wait up to this (default 1 s). */
  maxIntervalMs?: number;
  /** Stops the events (the iterator ends). */
  signal?: AbortSignal;
}

/** What tells one attempt of a tool call from any other: its execution, activity, attempt and worker. */
const attemptKey = (tool: ToolAttempt): string => `${tool.temporalRunId}/${tool.activityId}/${tool.attempt}/${tool.worker}`;

type TextEvent = Extract<RunEvent, { type: 'text' }>;
const callOf = (streamed: StreamedText) => `${streamed.model}#${streamed.callIndex}`;

/**
 * What has been shown of the model calls' text. A poll reads the call streaming now, then the
 * messages: text of the call shown goes out at once; text of a new call while the one shown has
 * not answered waits until after the messages read with it, which hold that answer (its rest goes
 * out first), and is dropped if they hold the new call's own answer too.
 */
class ShownText {
  /** The call shown (`<model>#<callIndex>`) until its answer lands, and its text shown so far. */
  private call: string | undefined;
  private text = '';
  /** An attempt of the call shown after its first streamed: its answer need not keep what was shown. */
  private retried = false;
  /** A new call's text read before the messages that answer the call shown. */
  private waiting: StreamedText | undefined;

  /** What `streamed` (the call streaming now) shows, before this poll's messages. */
  beat(streamed: StreamedText | undefined): TextEvent | undefined {
    if (!streamed) return undefined;
    if (callOf(streamed) === this.call) return this.more(streamed);
    if (this.text) return void (this.waiting = streamed);
    this.begin(streamed);
    return this.more(streamed);
  }

  /** The rest of a model message's text, if it answers the call shown or the one waiting (a session's history answers neither). */
  answer(text: string): TextEvent | undefined {
    if (!text.startsWith(this.text) && !this.retried) return undefined;
    const rest = text.length > this.text.length ? { type: 'text' as const, delta: text.slice(this.text.length), final: true } : undefined;
    // The call shown answered, and the one waiting (if any) is next; a second answer is the waiting call's own.
    if (this.call === undefined) this.waiting = undefined;
    this.begin(undefined);
    return rest;
  }

  /**
   * What the new call that waited for this poll's messages shows: nothing if they held its answer.
   * When no message answered the call shown, that call ended without an answer (it failed, and a
   * middleware such as Retry called again): text already shown that the new call's begins with is
   * not shown again, and its answer may differ from what was shown.
   */
  after(): TextEvent | undefined {
    const next = this.waiting;
    if (!next) return undefined;
    this.waiting = undefined;
    const abandoned = this.text;
    this.begin(next);
    if (abandoned && (next.text.startsWith(abandoned) || abandoned.startsWith(next.text))) [this.text, this.retried] = [abandoned, true];
    return this.more(next);
  }

  private begin(streamed: StreamedText | undefined): void {
    [this.call, this.text, this.retried] = [streamed && callOf(streamed), '', false];
  }

  private more(streamed: StreamedText): TextEvent | undefined {
    if (streamed.attempt > 1) this.retried = true;
    if (streamed.text.length <= this.text.length) return undefined;
    const delta = streamed.text.slice(this.text.length);
    this.text = streamed.text;
    const { model, callIndex, attempt, sequence } = streamed;
    return { type: 'text', delta, final: false, model, callIndex, attempt, sequence };
  }
}

/** The events of `handle`'s run until it ends. */
export async function* runEvents(handle: RunEventSource, { intervalMs = 150, maxIntervalMs = 1000, signal }: RunEventsOptions = {}): AsyncGenerator<RunEvent> {
  let ended: RunLifecycle | undefined;
  // Stopped with the events: a wait left running would keep retrying after its connection closed.
  const settled = handle.result(signal ? { signal } : {}).then(
    () => (ended = 'completed'),
    () => (ended = 'failed'),
  );
  const announced = new Set<string>();
  // Tool call attempts said, by execution, activity, attempt and worker.
  const attemptsSeen = new Set<string>();
  // Background tasks by id: the status last reported, and when they were last looked at.
  const taskStatus = new Map<string, string>();
  let tasksCheckedAt = 0;
  let seen = 0;
  const shown = new ShownText();
  // The history the last status was read at, and that status: the same history, the same state.
  let statusAt: { history: string; status: RunStatus } | undefined;
  let wait = intervalMs;
  for (;;) {
    const finishing = ended;
    let inFlight: InFlight | undefined;
    let moved = false;
    if (!finishing) {
      inFlight = await handle.inFlight().catch(() => undefined);
      const text = shown.beat(inFlight?.text);
      if (text) {
        moved = true;
        yield text;
      }
    }
    // While it runs, the run's own report; Temporal's word on how it ended (terminated, timed out) only at the end.
    // A history that has not moved since the last report has the same report: no query for it.
    const history = inFlight?.history;
    const unchanged = !finishing && history !== undefined && statusAt?.history === history;
    const status = unchanged ? statusAt!.status : await (finishing ? handle.status() : handle.reportedStatus()).catch(() => undefined);
    if (!unchanged) moved = true;
    if (status && history !== undefined && !finishing) statusAt = { history, status };
    // This poll's new tool call attempts, said after the model's request for the call and before its
    // result: the attempt was seen running before the messages that may already hold that result were read.
    const unsaid = (inFlight?.tools ?? []).filter((tool) => !attemptsSeen.has(attemptKey(tool)));
    const attempts = (answered?: ReadonlyArray<{ name: string; ref?: string }>): RunEvent[] => {
      const due = unsaid.filter((tool) => !answered || answered.some(({ name, ref }) => name === tool.name && (tool.ref === undefined || ref === tool.ref)));
      return due.map((tool) => {
        unsaid.splice(unsaid.indexOf(tool), 1);
        attemptsSeen.add(attemptKey(tool));
        moved = true;
        return { type: 'toolAttempt', name: tool.name, ...(tool.ref !== undefined ? { ref: tool.ref } : {}), attempt: tool.attempt, worker: tool.worker };
      });
    };
    if (status && status.messageCount > seen) {
      const messages = await handle.messages(seen).catch(() => [] as Message[]);
      for (const message of messages) {
        const index = seen++;
        if (message.role === 'tool') yield* attempts(message.content.flatMap((part) => ('toolResponse' in part ? [part.toolResponse] : [])));
        const rest = message.role === 'model' ? shown.answer(messageText(message)) : undefined;
        if (rest) yield rest;
        yield { type: 'message', index, message };
        for (const part of message.content) {
          if ('toolRequest' in part)
            yield {
              type: 'toolCall',
              name: part.toolRequest.name,
              ...(part.toolRequest.ref !== undefined ? { ref: part.toolRequest.ref } : {}),
              input: part.toolRequest.input,
            };
          else if ('toolResponse' in part)
            yield {
              type: 'toolResult',
              name: part.toolResponse.name,
              ...(part.toolResponse.ref !== undefined ? { ref: part.toolResponse.ref } : {}),
              output: part.toolResponse.output,
            };
        }
      }
    }
    // The rest after the messages, so a call's line follows the model's request for it.
    yield* attempts();
    const next = shown.after();
    if (next) {
      moved = true;
      yield next;
    }
    if (status && status.tasks.length && (finishing || Date.now() - tasksCheckedAt >= TASKS_INTERVAL_MS)) {
      tasksCheckedAt = Date.now();
      for (const task of await handle.tasks().catch(() => [] as TaskView[])) {
        if (taskStatus.get(task.taskId) === task.status) continue;
        taskStatus.set(task.taskId, task.status);
        yield { type: 'task', task };
      }
    }
    if (status && !finishing) {
      for (const interrupt of status.interrupts) {
        if (announced.has(interrupt.id)) continue;
        announced.add(interrupt.id);
        yield { type: 'hold', interrupt };
      }
    }
    if (finishing) {
      yield { type: 'end', state: status && status.state !== 'running' && status.state !== 'waiting' ? status.state : finishing };
      return;
    }
    if (signal?.aborted) return;
    // Quiet polls back off (a run waiting for a person changes nothing for minutes); any movement polls at the base rate again.
    wait = moved ? intervalMs : Math.min(maxIntervalMs, wait * 2);
    await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, wait))]);
  }
}

/** The streamed text in a model call's heartbeat details, if they hold some. */
export function streamedTextOf(details: unknown): StreamedText | undefined {
  const candidate = (details as Record<string, unknown> | undefined)?.[STREAM_DETAILS] as StreamedText | undefined;
  return candidate && typeof candidate.text === 'string' ? candidate : undefined;
}
