/**
 * A hold of a middleware's own (examples/spending-gate.ts: kind `spending`, decided with a new
 * limit or approve/deny), decided through the CLI by real processes that know nothing of it:
 * `keel status` shows what it asks and the decision's JSON Schema, `keel decide` sends a value,
 * a value the schema refuses exits 1 naming the field, and `keel status` answers afterwards who
 * decided what, when and how.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, runKeel, killAfterEach, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);

interface StatusJson {
  status: string;
  text?: string;
  interrupts: Array<{ id: string; kind: string; question?: string; toolName?: string; data?: Record<string, unknown>; decision?: Record<string, unknown> }>;
  decisions?: Array<Record<string, unknown>>;
}

async function status(config: string, runId: string): Promise<StatusJson> {
  const { stdout, code } = await runKeel(['status', runId, '--json', '--config', config]);
  expect(code).toBe(0);
  return JSON.parse(stdout) as StatusJson;
}

describe('a custom hold through the CLI', () => {
  it('shows its question and decision schema, takes a value that fits, refuses one that does not, and keeps who decided', async () => {
    const { dir, configPath: config } = writeTestConfig('custom-hold', {
      server: { enabled: false },
      modules: [join(ROOT, 'test', 'fixtures', 'spending-agents.ts')],
      middlewareModules: [join(ROOT, 'examples', 'spending-gate.ts')],
      models: [{ name: 'scripted/spender', script: [{ toolRequests: [{ name: 'pay', input: { amount: 500 } }] }, { text: 'paid' }] }],
      agents: [{ name: 'spender', model: 'scripted/spender', tools: ['pay'], use: [{ name: 'spendingGate', config: { limit: 100 } }] }],
    });
    const worker = spawnKeel(['worker', '--config', config], { env: { KEEL_TEST_DIR: dir } });
    track(worker);
    await worker.waitFor(/keel: worker \d+ on task queue/);
    const { runId } = JSON.parse((await runKeel(['run', 'spender', 'pay the bill', '--detach', '--json', '--config', config])).stdout) as { runId: string };

    let held: StatusJson['interrupts'][number] | undefined;
    await expect.poll(async () => (held = (await status(config, runId)).interrupts[0]), { timeout: 30_000, interval: 300 }).toBeDefined();
    expect(held).toMatchObject({ kind: 'spending', toolName: 'pay', question: 'Let pay spend 500? (the limit is 100)', data: { amount: 500, limit: 100 } });
    expect(JSON.stringify(held!.decision)).toContain('"limit"');

    const notJson = await runKeel(['decide', runId, held!.id, '{limit: 1000', '--config', config]);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toContain('the decision is not JSON');
    const unfit = await runKeel(['decide', runId, held!.id, '{"limit":"lots"}', '--config', config]);
    expect(unfit.code).toBe(1);
    expect(unfit.stderr).toMatch(/is not one it takes: .*limit: expected number/);
    expect((await status(config, runId)).interrupts.map((interrupt) => interrupt.id)).toEqual([held!.id]);

    const decided = await runKeel(['decide', runId, held!.id, '{"limit":1000}', '--as', 'finance@example.com', '--json', '--config', config]);
    expect(decided.code).toBe(0);
    expect(JSON.parse(decided.stdout)).toMatchObject({ runId, decided: [held!.id], decidedBy: 'finance@example.com' });

    await expect.poll(async () => (await status(config, runId)).status, { timeout: 30_000, interval: 300 }).toBe('completed');
    const after = await status(config, runId);
    expect(after.text).toBe('paid');
    expect(after.decisions).toEqual([
      expect.objectContaining({
        interruptId: held!.id,
        kind: 'spending',
        toolName: 'pay',
        decision: 'restart',
        payload: { limit: 1000 },
        decidedBy: 'finance@example.com',
        route: 'update',
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      }),
    ]);
    expect(readFileSync(join(dir, 'paid.log'), 'utf8')).toBe('500\n');
  });
});
