/**
 * Metrics on a worker's Prometheus endpoint (`metrics.prometheus`): a real `keel worker` serves
 * the SDK runtime's metrics and keel's own; the test scrapes it while a run waits on a hold and
 * after it ends, and checks runs, model calls (latency, tokens, cost), tool calls and holds.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { freePort } from './support/free-port';
import { ROOT, runKeel, spawnKeel, writeTestConfig, type KeelProcess } from './support/processes';
import { temporalCli } from './support/temporal-cli';

let worker: KeelProcess;
let configPath = '';
let taskQueue = '';
let metricsUrl = '';

beforeAll(async () => {
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  const written = writeTestConfig('metrics', {
    // A call for an agent no worker has is refused for good after this long.
    worker: { notRegisteredRetryFor: '2 seconds' },
    server: { enabled: false },
    metrics: { prometheus: `127.0.0.1:${port}`, tenants: ['acme-metrics'] },
    modules: [join(ROOT, 'test', 'fixtures', 'secret-agents.ts'), join(ROOT, 'test', 'fixtures', 'spend-agents.ts')],
    models: [
      { name: 'scripted/priced', script: [{ text: 'hello', usage: { inputTokens: 1000, outputTokens: 500 } }], price: { inputPerMTok: 3, outputPerMTok: 15 } },
    ],
    agents: [{ name: 'greeter', model: 'scripted/priced' }],
  });
  configPath = written.configPath;
  taskQueue = written.taskQueue!;
  worker = spawnKeel(['worker', '--config', configPath]);
  await worker.waitFor(/keel: worker \d+ on task queue/);
});
afterAll(async () => {
  worker?.kill('SIGTERM');
  await worker?.exited;
});

/** The samples of the scrape: `name{labels} value` lines, as a name+labels → value map. */
async function scrape(): Promise<Map<string, number>> {
  const text = await fetch(metricsUrl).then((response) => response.text());
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

/** The sum of the samples of `name` whose labels include every one of `labels`. */
function sum(samples: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const [key, value] of samples) {
    const match = /^([^{]+)(?:\{(.*)\})?$/.exec(key);
    if (match?.[1] !== name) continue;
    const has = Object.entries(labels).every(([label, wanted]) => (match[2] ?? '').includes(`${label}="${wanted}"`));
    if (has) total += value;
  }
  return total;
}

describe('metrics.prometheus', () => {
  it("serves the SDK's metrics and keel's own: runs, model calls with tokens and cost, tool calls, holds", async () => {
    expect(worker.output()).toContain(`keel: metrics at ${metricsUrl}`);
    const greeted = await runKeel(['run', 'greeter', 'hi', '--json', '--config', configPath]);
    expect(greeted.code, greeted.stderr).toBe(0);

    // A run that waits on a hold: raised, not yet decided.
    const started = await runKeel(['run', 'guarded-reader', 'read d1', '--detach', '--json', '--config', configPath]);
    const { runId } = JSON.parse(started.stdout) as { runId: string };
    await expect.poll(async () => sum(await scrape(), 'keel_holds_raised_total', { kind: 'approval' }), { timeout: 30_000, interval: 500 }).toBe(1);
    expect(sum(await scrape(), 'keel_holds_decided_total')).toBe(0);
    const approved = await runKeel(['approve', runId, 'i1', '--config', configPath]);
    expect(approved.code, approved.stderr).toBe(0);
    const watched = await runKeel(['watch', runId, '--json', '--config', configPath]);
    expect(JSON.parse(watched.stdout)).toMatchObject({ status: 'completed' });

    await expect.poll(async () => sum(await scrape(), 'keel_runs_ended_total', { outcome: 'completed' }), { timeout: 30_000, interval: 500 }).toBe(2);
    const samples = await scrape();
    expect(sum(samples, 'keel_runs_started_total', { agent: 'greeter' })).toBe(1);
    expect(sum(samples, 'keel_runs_started_total', { agent: 'guarded-reader' })).toBe(1);
    expect(sum(samples, 'keel_runs_ended_total', { agent: 'greeter', outcome: 'completed' })).toBe(1);
    expect(sum(samples, 'keel_model_calls_total', { model: 'scripted/priced', outcome: 'ok' })).toBe(1);
    expect(sum(samples, 'keel_model_calls_total', { model: 'scripted/reader', outcome: 'ok' })).toBe(2);
    expect(sum(samples, 'keel_model_tokens_total', { model: 'scripted/priced', kind: 'input' })).toBe(1000);
    expect(sum(samples, 'keel_model_tokens_total', { model: 'scripted/priced', kind: 'output' })).toBe(500);
    // 1000 × $3 + 500 × $15 per million tokens = $0.0105
    expect(sum(samples, 'keel_model_cost_micro_usd_total', { model: 'scripted/priced' })).toBe(10_500);
    expect(sum(samples, 'keel_model_call_latency_count', { model: 'scripted/priced' })).toBe(1);
    expect(sum(samples, 'keel_tool_calls_total', { tool: 'fetch_document', outcome: 'ok' })).toBe(1);
    expect(sum(samples, 'keel_tool_call_latency_count', { tool: 'fetch_document' })).toBe(1);
    expect(sum(samples, 'keel_holds_decided_total', { kind: 'approval', how: 'decided' })).toBe(1);
    expect(sum(samples, 'keel_hold_wait_count', { kind: 'approval' })).toBe(1);
    // The SDK's own, on the same endpoint.
    expect(sum(samples, 'temporal_workflow_completed_total')).toBeGreaterThanOrEqual(2);
    expect(sum(samples, 'temporal_activity_execution_latency_count')).toBeGreaterThanOrEqual(3);
  });

  it('labels only with names the worker registered: runs for an invented agent, or of an invented workflow type, count as (unknown)', async () => {
    // Started as an attacker would, with the temporal CLI: an agent no worker has (a long, odd name), and an input that does not parse.
    const invented = `invented-${'x'.repeat(300)} "quoted" \\ {braces}`;
    const inputs = [
      { agent: invented, messages: [{ role: 'user', content: [{ text: 'hi' }] }] },
      { agent: `${invented}-unparsed`, messages: [] },
    ];
    for (const input of inputs) {
      const args = ['workflow', 'start', '--type', 'generateWorkflow', '--task-queue', taskQueue, '--workflow-id', `forged-${randomUUID()}`];
      const sent = await temporalCli([...args, '--input', JSON.stringify(input)]);
      expect(sent.code, sent.stderr).toBe(0);
    }
    // And a workflow type the worker does not have, which the SDK's own metrics would name.
    const typed = `forged-${randomUUID()}`;
    const sent = await temporalCli(['workflow', 'start', '--type', `${invented}-type`, '--task-queue', taskQueue, '--workflow-id', typed, '--input', '{}']);
    expect(sent.code, sent.stderr).toBe(0);
    await expect
      .poll(async () => sum(await scrape(), 'keel_runs_ended_total', { agent: '(unknown)', outcome: 'failed' }), { timeout: 60_000, interval: 500 })
      .toBe(2);
    await expect
      .poll(async () => sum(await scrape(), 'temporal_workflow_task_execution_failed_total', { workflow_type: '(unknown)' }), {
        timeout: 30_000,
        interval: 500,
      })
      .toBeGreaterThan(0);
    await temporalCli(['workflow', 'terminate', '--workflow-id', typed, '--reason', 'test over']);
    const text = await fetch(metricsUrl).then((response) => response.text());
    expect(text).not.toContain('invented-');
    expect(text).not.toContain('xxxxxxxx');
  });

  it("counts a tenant's spend under its name only when metrics.tenants lists it; any other tenant is `other`", async () => {
    const stranger = `stranger-${randomUUID()}`;
    const client = await KeelClient.connect(loadConfig({ path: configPath }));
    try {
      await client.run('roomy_spender', 'go', { tenant: 'acme-metrics' });
      await client.run('roomy_spender', 'go', { tenant: stranger });
    } finally {
      await client.close();
    }
    // Three calls of 6 input and 4 output tokens each, per run.
    await expect
      .poll(async () => sum(await scrape(), 'keel_tenant_tokens_total', { tenant: 'other', kind: 'input' }), { timeout: 30_000, interval: 500 })
      .toBe(18);
    const samples = await scrape();
    expect(sum(samples, 'keel_tenant_tokens_total', { tenant: 'acme-metrics', kind: 'input' })).toBe(18);
    expect(sum(samples, 'keel_tenant_tokens_total', { tenant: 'acme-metrics', kind: 'output' })).toBe(12);
    expect(await fetch(metricsUrl).then((response) => response.text())).not.toContain('stranger-');
  });

  it('refuses an address that is not host:port', async () => {
    const bad = writeTestConfig('metrics-bad', {
      server: { enabled: false },
      metrics: { prometheus: 'localhost' },
      modules: [join(ROOT, 'test', 'fixtures', 'secret-agents.ts')],
    });
    const { code, stderr } = await runKeel(['worker', '--config', bad.configPath]);
    expect(code).toBe(2);
    expect(stderr).toContain('metrics.prometheus: "localhost" is not host:port (e.g. 127.0.0.1:9464)');
  });
});
