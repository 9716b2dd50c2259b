/**
 * Prints a run's messages as they arrive (model text, tool calls, tool results), by
 * polling the run's `messages` query. Node side.
 */
import type { Message } from '../core/messages';
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

/**
 * Polls `handle` until `done` settles, writing each new message (and a turn header before
 * each model message) with `write`. Polling errors are ignored: the run may be between workers.
 */
export async function followRun(handle: RunHandle, done: Promise<unknown>, write: (line: string) => void, { intervalMs = 200 }: { intervalMs?: number } = {}): Promise<void> {
  let seen = 0;
  let turn = 0;
  let finished = false;
  void done.then(
    () => (finished = true),
    () => (finished = true),
  );
  const drain = async (): Promise<void> => {
    try {
      const fresh = await handle.messages(seen);
      for (const message of fresh) {
        seen++;
        if (message.role === 'system') continue;
        if (message.role === 'model') write(`turn ${++turn}`);
        for (const line of describeMessage(message)) write(line);
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
}
