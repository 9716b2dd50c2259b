/**
 * Side effects that happen once (docs/holds.md): a tool declared `effects: 'once'` whose attempt
 * is lost with its worker (SIGKILLed mid-call, real processes) is not run again blindly: the run
 * holds the call with a `reconcile` hold, shown like any hold, and each answer does what it says:
 * it happened (its output answers the call), it did not (it runs again), or stop the run. An
 * approve or deny, which says neither, is refused.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { defineTool } from '../src/define';
import { z } from 'zod';
import { killAfterEach, ROOT, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);

describe("a tool with effects: 'once'", () => {
  it('whose attempt was lost is held for a person, never run again unasked; each answer does what it says', async () => {
    const { dir, configPath } = writeTestConfig('effects-once', {
      // A call's worker that dies is noticed within 2 s; the attempt after it comes at once.
      activities: { tool: { startToCloseTimeout: '1 minute', heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' } } },
      modules: [join(ROOT, 'test', 'fixtures', 'once-agents.ts')],
    });
    const startWorker = async () => {
      const worker = track(spawnKeel(['worker', '--config', configPath], { env: { KEEL_TEST_DIR: dir } }));
      await worker.waitFor(/keel: worker \d+ on task queue/);
      return worker;
    };
    const lines = () => (existsSync(join(dir, 'charges.log')) ? readFileSync(join(dir, 'charges.log'), 'utf8').trim().split('\n') : []);
    const starts = (runId: string) => lines().filter((line) => line.startsWith(`start ${runId} `)).length;

    const first = await startWorker();
    const client = await KeelClient.connect(loadConfig({ path: configPath }));
    try {
      const runs = await Promise.all([1, 2, 3].map(() => client.start('once-charger', 'charge it')));
      const [happened, didNot, stopped] = runs.map((run) => run.runId) as [string, string, string];
      await expect.poll(() => lines().filter((line) => line.startsWith('start ')).length, { timeout: 30_000 }).toBe(3);
      first.kill('SIGKILL');
      await first.exited;
      await startWorker();

      // Each call's next attempt asks instead of charging again.
      for (const run of runs)
        await expect
          .poll(async () => (await client.getHandle(run.runId).status()).interrupts.map((hold) => hold.kind), { timeout: 30_000 })
          .toEqual(['reconcile']);
      const [hold] = (await client.getHandle(happened).pendingHolds()) as [Awaited<ReturnType<ReturnType<KeelClient['getHandle']>['pendingHolds']>>[number]];
      expect(hold).toMatchObject({ kind: 'reconcile', toolName: 'charge_card', input: { cents: 700 } });
      expect(hold.question).toMatch(/^did charge_card happen\? Its attempt 1 was lost mid-flight/);
      expect(hold.data).toMatchObject({ keelReconcile: { toolName: 'charge_card', lostAttempt: 1, idempotencyKey: expect.any(String) } });
      // Shown like any hold: `keel holds` lists them.
      const listed = await client.holds();
      expect(runs.every((run) => listed.some((view) => view.runId === run.runId && view.kind === 'reconcile'))).toBe(true);
      for (const run of runs) expect(starts(run.runId)).toBe(1);

      // Approve or deny says neither "it happened" nor "it did not": refused, nothing runs.
      await expect(client.getHandle(happened).decide({ interruptId: hold.id, approved: true })).rejects.toThrow(/reconcile/);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(starts(happened)).toBe(1);

      // It happened: its output answers the call, and it never runs again.
      await client.getHandle(happened).decide({ interruptId: hold.id, respond: { charged: 700, receipt: 'from-the-bank' }, decidedBy: 'ops' });
      expect((await client.getHandle(happened).result()).text).toBe('done: {"charged":700,"receipt":"from-the-bank"}');
      expect(starts(happened)).toBe(1);

      // It did not: it runs again, once.
      await client.getHandle(didNot).decide({ interruptId: 'i1', restart: { reconcile: 'run-again' }, decidedBy: 'ops' });
      expect((await client.getHandle(didNot).result()).text).toBe('done: {"charged":700,"receipt":"r-1"}');
      expect(starts(didNot)).toBe(2);

      // Stop: the run ends without running it again.
      await client.getHandle(stopped).decide({ interruptId: 'i1', restart: { reconcile: 'stop' }, decidedBy: 'ops' });
      await expect(client.getHandle(stopped).result()).rejects.toThrow(/nobody could say whether tool "charge_card" happened/);
      expect(starts(stopped)).toBe(1);
    } finally {
      await client.close();
    }
  });

  it('cannot be a local activity, whose lost attempts nothing records', () => {
    expect(() => defineTool({ name: 'charge', description: 'x', input: z.object({}), effects: 'once', local: true, run: () => null })).toThrow(
      'defineTool("charge"): a tool with effects: \'once\' cannot be local (a lost local attempt is run again unseen)',
    );
  });
});
