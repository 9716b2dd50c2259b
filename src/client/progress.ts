/**
 * Prints a run's messages as they arrive (model text, tool calls, tool results), by
 * polling the run's `messages` query. Node side.
 */
import type { Message } from '../core/messages';
import type { Interrupt } from '../core/run';
import type { RunHandle } from './keel-client';

function short(value: unknown, max = 160): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
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

/** Lines telling a person that a run waits for them and how to decide. */
export function describeInterrupt(runId: string, interrupt: Interrupt): string[] {
  const what = interrupt.kind === 'budget' ? `the budget is spent (${interrupt.message ?? 'limit reached'})` : `${interrupt.toolName}(${short(interrupt.input ?? {})})${interrupt.message ? `: ${interrupt.message}` : ''}`;
  return [
    `  ⏸ waiting for a decision on ${interrupt.id} (${interrupt.kind}${interrupt.judge ? `, judge: ${interrupt.judge}` : ''}): ${what}`,
    `    approve: npx keel approve ${runId} ${interrupt.id}`,
    `    deny:    npx keel deny ${runId} ${interrupt.id} --reason "..."`,
  ];
}

/** Options of `followRun`. */
export interface FollowOptions {
  intervalMs?: number;
  /**
   * Called once for each interrupt that starts waiting (default: print how to decide). It
   * runs beside the polling, which goes on printing meanwhile; `followRun` waits for it
   * before it returns.
   */
  onInterrupt?: (interrupt: Interrupt) => void | Promise<void>;
}

/**
 * Polls `handle` until `done` settles, writing each new message (and a turn header before
 * each model message) with `write`, and reporting each new pending interrupt. Polling
 * errors are ignored: the run may be between workers.
 */
export async function followRun(handle: RunHandle, done: Promise<unknown>, write: (line: string) => void, { intervalMs = 200, onInterrupt }: FollowOptions = {}): Promise<void> {
  const reportInterrupt = onInterrupt ?? ((interrupt: Interrupt) => describeInterrupt(handle.runId, interrupt).forEach(write));
  const announced = new Set<string>();
  const reporting: Array<Promise<void>> = [];
  let seen = 0;
  let turn = 0;
  let finished = false;
  void done.then(
    () => (finished = true),
    () => (finished = true),
  );
  const drain = async (): Promise<void> => {
    try {
      // One status query per tick; messages are fetched only when there are new ones.
      const status = await handle.status();
      if (status.messageCount > seen) {
        for (const message of await handle.messages(seen)) {
          seen++;
          if (message.role === 'system') continue;
          if (message.role === 'model') write(`turn ${++turn}`);
          for (const line of describeMessage(message)) write(line);
        }
      }
      if (finished) return;
      for (const interrupt of status.interrupts) {
        if (announced.has(interrupt.id)) continue;
        announced.add(interrupt.id);
        // Not awaited: a person answering a prompt must not stop the run's events from printing.
        reporting.push(Promise.resolve().then(() => reportInterrupt(interrupt)).catch(() => undefined));
      }
    } catch {
      // the run may be moving between workers; try again on the next tick
    }
  };
  while (!finished) {
    await drain();
    await Promise.race([done.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, intervalMs))]);
  }
  await drain();
  await Promise.all(reporting);
}
