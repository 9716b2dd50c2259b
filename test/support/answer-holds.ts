/**
 * Answers a run's holds in order with programmed decisions, as a person would, through the
 * real `resume` update. Used by the spec runner and the history recorder (no vitest here).
 */
import type { RunHandle } from '../../src/client/keel-client';
import type { Decision } from '../../src/core/holds';
import type { Hold } from '../../src/core/run';

/**
 * Answers the run's holds with the decisions, in order, until `settled` settles; returns
 * every interrupt seen. A decision that names an `interruptId` waits for that hold and
 * answers it (leaving earlier ones undecided); one without answers the oldest unanswered
 * hold. A hold with no decision left cancels the run and throws, instead of waiting forever.
 */
export async function answerHolds(handle: RunHandle, settled: Promise<unknown>, decisions: ReadonlyArray<Record<string, unknown>>): Promise<Hold[]> {
  const seen: Hold[] = [];
  const seenIds = new Set<string>();
  const answered = new Set<string>();
  let done = false;
  void settled.then(
    () => (done = true),
    () => (done = true),
  );
  let next = 0;
  while (!done) {
    const pending = await handle.pendingHolds().catch(() => []);
    for (const interrupt of pending) {
      if (seenIds.has(interrupt.id)) continue;
      seenIds.add(interrupt.id);
      seen.push(interrupt);
    }
    const decision = decisions[next];
    const wanted = typeof decision?.interruptId === 'string' ? decision.interruptId : undefined;
    const target = wanted ? pending.find((interrupt) => interrupt.id === wanted) : pending.find((interrupt) => !answered.has(interrupt.id));
    if (target && !answered.has(target.id)) {
      if (!decision) {
        await handle.cancel();
        throw new Error(`the run holds ${target.id} (${target.kind} on ${target.toolName}) but has no decision left`);
      }
      next++;
      const accepted = await handle.decide({ ...decision, interruptId: target.id } as Decision);
      for (const id of accepted.decided) answered.add(id);
      continue;
    }
    await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, 50))]);
  }
  return seen;
}
