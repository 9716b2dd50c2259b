/**
 * Prints a run's messages as they arrive (model text, tool calls, the worker running each, tool
 * results), by polling the run's `messages` query. Node side.
 */
import { decideCommands } from '../client/decide-commands';
import { takesApproval } from '../core/holds';
import type { Message } from '../core/messages';
import type { Hold } from '../core/run';
import type { RunHandle } from '../client/keel-client';

/** A tool call's input or output on one line of at most `max` characters (a long text, such as a skill's instructions, is cut). */
function short(value: unknown, max = 160): string {
  const text = (typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value))).replace(/\s+/g, ' ');
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Human-readable lines for one message. */
export function describeMessage(message: Message): string[] {
  const lines: string[] = [];
  for (const part of message.content) {
    if ('text' in part && part.text && message.role === 'model') lines.push(`  model: ${part.text}`);
    else if ('text' in part && part.text && message.role === 'user') lines.push(`  user: ${part.text}`);
    else if ('toolRequest' in part) lines.push(`  → ${part.toolRequest.name}(${short(part.toolRequest.input ?? {})})`);
    else if ('toolResponse' in part) lines.push(`  ← ${part.toolResponse.name}: ${short(part.toolResponse.output)}`);
  }
  return lines;
}

/** The line for a tool call's attempt on a worker: `  ⚙ slow_step runs on worker 1234@host (attempt 1)`. */
export function describeToolAttempt({ name, worker, attempt }: { name: string; worker: string; attempt: number }): string {
  return `  ⚙ ${name} runs on worker ${worker} (attempt ${attempt})`;
}

/** Lines telling a person that a run waits for them and how to decide: what the hold asks, and the commands its decision schema allows. */
export function describeHold(runId: string, interrupt: Hold): string[] {
  const question = interrupt.question ?? interrupt.message;
  const call = interrupt.toolName && !interrupt.toolName.startsWith('(') ? `${interrupt.toolName}(${short(interrupt.input ?? {})})` : interrupt.toolName;
  const lines = [`  ⏸ waiting for a decision on ${interrupt.id} (${interrupt.kind}): ${[call, question].filter(Boolean).join(': ')}`];
  const commands = decideCommands(runId, interrupt.id, takesApproval(interrupt.decision));
  if (commands.approve) lines.push(`    approve: ${commands.approve}`, `    deny:    ${commands.deny}`);
  lines.push(`    decide:  ${commands.decide}`);
  if (!commands.approve && interrupt.decision) lines.push(`    (the decision: ${JSON.stringify(interrupt.decision)})`);
  return lines;
}

/** Options of `followRun`. */
export interface FollowOptions {
  intervalMs?: number;
  /**
   * Called once for each hold that starts waiting (default: print how to decide). It
   * runs beside the polling, which goes on printing meanwhile; `followRun` waits for it
   * before it returns.
   */
  onHold?: (interrupt: Hold) => void | Promise<void>;
  /** Writes text without a line end: the model's text then shows as it streams. Without it, a model message shows once it is complete. */
  writeRaw?: (text: string) => void;
  /** Colours the lines (for a terminal; keel passes it only when the output is one and NO_COLOR is unset). */
  colour?: boolean;
  /** Stops following (the run goes on). */
  signal?: AbortSignal;
}

/** ANSI styles for the kinds of line `followRun` writes. */
const STYLES = { turn: '1', call: '36', result: '2', hold: '33', task: '35', worker: '34' } as const;

/** Whether a stream is a terminal that takes colours (NO_COLOR, https://no-color.org, turns them off). */
export function wantsColour(stream: { isTTY?: boolean }): boolean {
  return Boolean(stream.isTTY) && !process.env.NO_COLOR;
}

/**
 * Follows `handle`'s events until `done` settles: the model's text as it streams (with
 * `writeRaw`), each message (a turn header before each model message), and each new pending
 * interrupt. Polling errors are ignored: the run may be between workers.
 */
export async function followRun(
  handle: RunHandle,
  done: Promise<unknown>,
  write: (line: string) => void,
  { intervalMs = 200, onHold, writeRaw, colour = false, signal }: FollowOptions = {},
): Promise<void> {
  const paint = (style: keyof typeof STYLES, line: string) => (colour ? `\x1b[${STYLES[style]}m${line}\x1b[0m` : line);
  const writeLine = (line: string) => write(line.startsWith('  →') ? paint('call', line) : line.startsWith('  ←') ? paint('result', line) : line);
  const reportHold = onHold ?? ((interrupt: Hold) => describeHold(handle.runId, interrupt).forEach((line) => write(paint('hold', line))));
  const reporting: Array<Promise<void>> = [];
  // The caller reads `done` afterwards; a failed run must not count as an unhandled rejection meanwhile.
  const settled = done.catch(() => undefined);
  let turn = 0;
  // A model line being written as its text streams.
  let streaming = false;
  // The events end with the run (after a last look at its messages).
  for await (const event of handle.events({ intervalMs, ...(signal ? { signal } : {}) })) {
    if (event.type === 'text') {
      if (!writeRaw || (!streaming && event.final)) continue;
      if (!streaming) {
        write(paint('turn', `turn ${++turn}`));
        writeRaw('  model: ');
        streaming = true;
      }
      writeRaw(event.delta);
    } else if (event.type === 'message') {
      const { message } = event;
      if (message.role === 'system') continue;
      if (message.role === 'model') {
        if (streaming) {
          writeRaw?.('\n');
          streaming = false;
          // The text line is out already; the rest of the message (tool calls) follows.
          for (const line of describeMessage({ ...message, content: message.content.filter((part) => !('text' in part)) })) writeLine(line);
          continue;
        }
        write(paint('turn', `turn ${++turn}`));
      }
      for (const line of describeMessage(message)) writeLine(line);
    } else if (event.type === 'toolAttempt') {
      // Which worker (pid@host) runs the call: the one to kill to see it retried elsewhere.
      if (streaming) {
        writeRaw?.('\n');
        streaming = false;
      }
      write(paint('worker', describeToolAttempt(event)));
    } else if (event.type === 'task') {
      const { task } = event;
      const outcome =
        task.status === 'completed' && task.result
          ? `: ${task.result.length > 120 ? `${task.result.slice(0, 119)}…` : task.result}`
          : task.error
            ? `: ${task.error.status}: ${task.error.message}`
            : '';
      write(paint('task', `  ⧗ background task ${task.name ?? task.taskId} (${task.agent}) ${task.status}${outcome}`));
    } else if (event.type === 'hold') {
      // Not awaited: a person answering a prompt must not stop the run's events from printing.
      reporting.push(
        Promise.resolve()
          .then(() => reportHold(event.interrupt))
          .catch(() => undefined),
      );
    }
  }
  // Stopped by `signal` (the run goes on without this watcher): no wait for its end.
  if (!signal?.aborted) await settled;
  await Promise.all(reporting);
}
