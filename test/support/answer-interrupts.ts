/**
 * Answers a run's holds in order with programmed decisions, as a person would, through the
 * real `resume` update. Used by the spec runner and the history recorder (no vitest here).
 */
import type { RunHandle } from '../../src/client/keel-client';
import type { Decision } from '../../src/core/interrupts';
import type { Interrupt } from '../../src/core/run';

/**
 * Answers each interrupt the run holds with the next decision until `settled` settles;
 * returns every interrupt seen. A hold with no decision left cancels the run and throws,
 * instead of waiting forever.
 */
export async function answerInterrupts(handle: RunHandle, settled: Promise<unknown>, decisions: ReadonlyArray<Record<string, unknown>>): Promise<Interrupt[]> {
  const seen: Interrupt[] = [];
  const answered = new Set<string>();
  let done = false;
  void settled.then(
    () => (done = true),
    () => (done = true),
  );
  let next = 0;
  while (!done) {
    const pending = await handle.pendingInterrupts().catch(() => []);
    for (const interrupt of pending) {
      if (answered.has(interrupt.id)) continue;
      answered.add(interrupt.id);
      seen.push(interrupt);
      const decision = decisions[next++];
      if (!decision) {
        await handle.cancel();
        throw new Error(`the run holds ${interrupt.id} (${interrupt.kind} on ${interrupt.toolName}) but has no decision left`);
      }
      const accepted = await handle.decide({ interruptId: interrupt.id, ...decision } as Decision);
      for (const id of accepted.decided) answered.add(id);
    }
    await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, 50))]);
  }
  return seen;
}
