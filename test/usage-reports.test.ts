/**
 * Usage a model reports is checked as a tool's report is: a real `keel worker` with metrics on
 * runs scripted models (playing providers) that report a negative cost, negative tokens, NaN or
 * Infinity under a Budget. Each run fails DATA_LOSS naming the model and the field (not INTERNAL
 * from the metrics counter), what it counted before stays, and the Budget is never lowered.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/free-port';
import { ROOT, runKeel, spawnKeel, writeTestConfig, type KeelProcess } from './support/processes';

let worker: KeelProcess;
let configPath = '';
let metricsUrl = '';

/** Each bad report, by the model that makes it, and the error it must give. */
const BAD_REPORTS = [
  { model: 'negative-cost', usage: { cost: -1 }, error: 'usage.cost: must not be negative (got -1)' },
  { model: 'negative-tokens', usage: { inputTokens: -1000 }, error: 'usage.inputTokens: must not be negative (got -1000)' },
  { model: 'nan-tokens', usage: { outputTokens: Number.NaN }, error: 'usage.outputTokens: must be a finite number (got NaN)' },
  { model: 'infinite-tokens', usage: { totalTokens: Number.POSITIVE_INFINITY }, error: 'usage.totalTokens: must be a finite number (got Infinity)' },
];

beforeAll(async () => {
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  configPath = writeTestConfig('usage-reports', {
    server: { enabled: false },
    metrics: { prometheus: `127.0.0.1:${port}` },
    modules: [join(ROOT, 'test', 'fixtures', 'tools.ts')],
    // Turn 1 spends 90% of the budget; turn 2 reports usage keel cannot count (before the fix, a
    // negative one lowered the count and turn 3 spent past the limit).
    models: BAD_REPORTS.map(({ model, usage }) => ({
      name: `scripted/${model}`,
      script: [
        { toolRequests: [{ name: 'echo', input: { v: '1' } }], usage: { inputTokens: 900, cost: 0.009 } },
        { toolRequests: [{ name: 'echo', input: { v: '2' } }], usage },
        { text: 'spent past the budget', usage: { inputTokens: 900, cost: 0.009 } },
      ],
    })),
    agents: BAD_REPORTS.map(({ model }) => ({
      name: model,
      model: `scripted/${model}`,
      tools: ['echo'],
      use: [{ name: 'budget', config: { limit: { cost: 0.01, inputTokens: 1000 } } }],
    })),
  }).configPath;
  worker = spawnKeel(['worker', '--config', configPath]);
  await worker.waitFor(/keel: worker \d+ on task queue/);
});
afterAll(async () => {
  worker?.kill('SIGTERM');
  await worker?.exited;
});

/** The value of the sample of `name` whose labels include each of `labels`, summed (0 when none). */
async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const text = await fetch(metricsUrl).then((response) => response.text());
  let total = 0;
  for (const line of text.split('\n')) {
    const match = /^([^{\s]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (match?.[1] === name && Object.entries(labels).every(([label, value]) => match[2]!.includes(`${label}="${value}"`))) total += Number(match[3]);
  }
  return total;
}

describe('usage a model reports', () => {
  it('fails the run DATA_LOSS naming the model and the field, and never lowers the Budget', async () => {
    const runs = await Promise.all(BAD_REPORTS.map(({ model }) => runKeel(['run', model, 'go', '--json', '--config', configPath])));
    for (const [index, { model, error }] of BAD_REPORTS.entries()) {
      const run = runs[index]!;
      expect(run.code, run.stderr).toBe(1);
      const summary = JSON.parse(run.stdout) as { runId: string; status: string; usage: unknown; error: unknown };
      expect(summary).toMatchObject({
        status: 'failed',
        error: { status: 'DATA_LOSS', message: `model "scripted/${model}" reported usage keel cannot count: ${error}` },
        // Turn 1's spend, and nothing of turn 2's: the count was not lowered (and turn 3 never ran).
        usage: { inputTokens: 900, cost: 0.009 },
      });
    }
    // keel status says the same of a finished run.
    const { runId } = JSON.parse(runs[0]!.stdout) as { runId: string };
    const status = await runKeel(['status', runId, '--json', '--config', configPath]);
    expect(JSON.parse(status.stdout)).toMatchObject({
      status: 'failed',
      turn: 2,
      usage: { inputTokens: 900, cost: 0.009 },
      error: { status: 'DATA_LOSS', message: 'model "scripted/negative-cost" reported usage keel cannot count: usage.cost: must not be negative (got -1)' },
    });
    // The metrics counted each refused call as such, and nothing of its usage.
    await expect.poll(() => metric('keel_model_calls_total', { outcome: 'DATA_LOSS' }), { timeout: 20_000, interval: 500 }).toBe(BAD_REPORTS.length);
    for (const { model } of BAD_REPORTS) expect(await metric('keel_model_calls_total', { model: `scripted/${model}`, outcome: 'ok' })).toBe(1);
    expect(await metric('keel_model_calls_total', { outcome: 'INTERNAL' })).toBe(0);
    expect(await metric('keel_model_cost_micro_usd_total', {})).toBe(BAD_REPORTS.length * 9000);
    expect(worker.output()).not.toContain('MetricCounter');
  });
});
