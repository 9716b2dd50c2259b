/**
 * Spend per tenant and owner (docs/tenants.md, "Spend per tenant"): a Budget of scope tenant or
 * owner counts every call of every run of that tenant (owner) in one durable ledger, a workflow
 * of its own, per window. Tried the way it breaks: runs of one tenant crossing the limit between
 * them (the next call stops, or waits for a decision), another tenant untouched, a run of no one
 * refused in one line, charges forged or sent twice with the temporal CLI, and worker processes
 * SIGKILLed while runs charge (every count exact, none twice). `keel cost` reads the ledger.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient, runErrorOf } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { budget } from '../src/features/budget/budget';
import { chargeSpendUpdate, spendLedgerId, type SpendReport } from '../src/features/budget/spend-door';
import { retryingUpdate } from '../src/node/update-retry';
import { Registry } from '../src/registry';
import * as spendAgents from './fixtures/spend-agents';
import { startTestWorker, type TestWorker } from './support/harness';
import { ROOT, killAfterEach, runKeel, spawnKeel, writeTestConfig } from './support/processes';
import { temporalCli } from './support/temporal-cli';

const track = killAfterEach(afterEach);
let worker: TestWorker;
/** A temporal.yaml on the shared server, for `keel cost`. */
let costConfig: string;

beforeAll(async () => {
  worker = await startTestWorker(new Registry().addModuleExports(spendAgents));
  costConfig = writeTestConfig('spend-cost').configPath;
});
afterAll(async () => {
  await worker?.stop();
});

/** `keel cost --<scope> <name> --json`: the ledger's report. */
async function cost(scope: 'tenant' | 'owner', name: string): Promise<SpendReport> {
  const { code, stdout, stderr } = await runKeel(['cost', `--${scope}`, name, '--json', '--config', costConfig]);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as SpendReport;
}

const tenantOf = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

describe('spend per tenant', () => {
  it("a tenant's runs share one limit per window, each call counted once; another tenant's spend is its own; keel cost says what each spent", async () => {
    const [a, b] = [tenantOf('acme'), tenantOf('bolt')];
    const first = await worker.client.run('spender', 'go', { tenant: a, owner: 'alice' });
    expect(first.usage.totalTokens).toBe(30);
    // The second run of the tenant: its first two calls take the window to 50, the limit; its third call is refused.
    const second = await worker.client.start('spender', 'go', { tenant: a, owner: 'alex' });
    const error = await second.result().then(() => undefined, runErrorOf);
    expect(error?.status).toBe('ABORTED');
    expect(error?.message).toBe(`budget: the tenant ${a} used 50 of 50 totalTokens in its window`);
    expect((await second.status()).usage.totalTokens).toBe(20);
    // Another tenant's runs are counted in its own ledger.
    expect((await worker.client.run('spender', 'go', { tenant: b, owner: 'bob' })).usage.totalTokens).toBe(30);

    const report = await cost('tenant', a);
    expect(report).toMatchObject({ scope: 'tenant', name: a, charges: 5, repeats: 0 });
    expect(report.windows).toHaveLength(1);
    const [day] = report.windows;
    expect(day!.size).toBe(24 * 60 * 60 * 1000);
    expect(day!.start % day!.size).toBe(0);
    expect(day!.usage).toEqual({ inputTokens: 30, outputTokens: 20, totalTokens: 50 });
    expect((await cost('tenant', b)).windows[0]!.usage.totalTokens).toBe(30);
    // For a person: one line per window.
    const human = await runKeel(['cost', '--tenant', a, '--config', costConfig]);
    expect(human.stdout.trim()).toBe(`${new Date(day!.start).toISOString()}  1d  usage: 30 input + 20 output tokens`);
  });

  it('with interrupt, the run that would cross the limit waits for a decision; approved, it goes on, counted from there', async () => {
    const tenant = tenantOf('cask');
    await worker.client.run('spender_hold', 'go', { tenant });
    const held = await worker.client.start('spender_hold', 'go', { tenant });
    await expect.poll(async () => (await held.status()).interrupts.length, { timeout: 15_000 }).toBe(1);
    const [hold] = (await held.status()).interrupts;
    expect(hold).toMatchObject({ kind: 'budget', message: `Usage budget reached: the tenant used 50 of 50 totalTokens in its window` });
    expect(hold!.data).toMatchObject({ spent: { totalTokens: 50 }, limit: { totalTokens: 50 } });
    await held.decide({ interruptId: hold!.id, approved: true });
    expect((await held.result()).text).toBe('done');
    expect((await cost('tenant', tenant)).windows[0]!.usage.totalTokens).toBe(60);
  });

  it("an owner's budget counts that owner's runs in its own window, whatever their tenant", async () => {
    const [bob, carol] = [tenantOf('bob'), tenantOf('carol')];
    const stopped = await worker.client.start('owner_spender', 'go', { tenant: 'acme', owner: bob });
    expect((await stopped.result().then(() => undefined, runErrorOf))?.message).toBe(`budget: the owner ${bob} used 20 of 20 totalTokens in its window`);
    // Carol's ledger is her own: her first call is not refused by bob's spend.
    const hers = await worker.client.start('owner_spender', 'go', { tenant: 'acme', owner: carol });
    await hers.result().catch(() => undefined);
    expect((await hers.status()).usage.totalTokens).toBe(20);
    const report = await cost('owner', bob);
    expect(report.windows.map((window) => [window.size, window.usage.totalTokens])).toEqual([[60 * 60 * 1000, 20]]);
  });

  it('a run of no tenant under a tenant budget is refused in one line, before any model call', async () => {
    const handle = await worker.client.start('spender', 'go');
    const error = await handle.result().then(() => undefined, runErrorOf);
    expect(error?.status).toBe('FAILED_PRECONDITION');
    expect(error?.message).toBe(
      "budget: scope tenant counts the spend of the run's tenant, and this run belongs to no tenant (start it with { tenant }, or through keel serve with auth on)",
    );
    expect((await handle.status()).usage).toEqual({});
  });

  it('a window on a run budget, or too short a window, is refused at once, naming the field', () => {
    expect(() => budget({ limit: { totalTokens: 5 }, window: '1 day' })).toThrow(
      'invalid config for middleware "budget": config.window: a window is for scope tenant or owner; scope run has none',
    );
    expect(() => budget({ limit: { totalTokens: 5 }, scope: 'tenant', window: '10ms' })).toThrow(
      'invalid config for middleware "budget": config.window: must be at least 1 second',
    );
  });

  it('a charge forged with the temporal CLI (update or signal, undecodable too) is refused and changes nothing; one sent twice counts once', async () => {
    const tenant = tenantOf('dune');
    await worker.client.run('roomy_spender', 'go', { tenant });
    const workflowId = spendLedgerId('tenant', tenant);
    const update = (charge: unknown) =>
      temporalCli(['workflow', 'update', 'execute', '--workflow-id', workflowId, '--name', 'charge', '--input', JSON.stringify(charge)]);
    const now = Date.now();
    const charge = { scope: 'tenant', name: tenant, at: now, windows: [24 * 60 * 60 * 1000], run: 'forged' };
    // Usage keel cannot count, a charge for another ledger, something that is not a charge.
    const negative = await update({ ...charge, charges: [{ n: 1, at: now, usage: { totalTokens: -1000 } }] });
    expect(negative.code).not.toBe(0);
    expect(negative.stderr).toContain('call #1 of run forged, charged to the spend ledger of tenant');
    expect(negative.stderr).toContain('reported usage keel cannot count');
    const elsewhere = await update({ ...charge, name: 'someone-else', charges: [{ n: 1, at: now, usage: { totalTokens: 5 } }] });
    expect(elsewhere.code).not.toBe(0);
    expect(elsewhere.stderr).toContain(`a charge for tenant someone-else sent to the ledger of tenant ${tenant}`);
    expect((await update({ hello: 'world' })).code).not.toBe(0);
    expect((await cost('tenant', tenant)).windows[0]!.usage.totalTokens).toBe(30);
    // Calls sent again (the activity retried after the ledger counted them) are known by their run and number.
    const again = { ...charge, run: `operator-${randomUUID()}`, charges: [{ n: 1, at: now, usage: { totalTokens: 7 } }] };
    expect((await update(again)).code).toBe(0);
    expect((await update(again)).code).toBe(0);
    expect((await update({ ...again, charges: [...again.charges, { n: 2, at: now, usage: { totalTokens: 1 } }] })).code).toBe(0);
    expect((await cost('tenant', tenant)).windows[0]!.usage.totalTokens).toBe(38);
    // The same by signal (a run's last send goes so): refused ones change nothing, a repeat counts once.
    const signal = (charge: unknown, meta: string[] = []) =>
      temporalCli(['workflow', 'signal', '--workflow-id', workflowId, '--name', 'chargeLast', '--input', JSON.stringify(charge), ...meta]);
    expect((await signal({ ...charge, charges: [{ n: 1, at: now, usage: { totalTokens: -1000 } }] })).code).toBe(0);
    expect((await signal({ ...charge, name: 'someone-else', charges: [{ n: 1, at: now, usage: { totalTokens: 5 } }] })).code).toBe(0);
    expect((await signal({ hello: 'world' })).code).toBe(0);
    expect((await signal(again, ['--input-meta', 'encoding=binary/x-bogus'])).code).toBe(0);
    expect((await signal({ ...again, charges: [...again.charges, { n: 2, at: now, usage: { totalTokens: 1 } }] })).code).toBe(0);
    const report = await cost('tenant', tenant);
    expect(report.windows[0]!.usage.totalTokens).toBe(38);
    expect(report).toMatchObject({ charges: 5, repeats: 4 });
    // The ledger still answers and counts.
    expect((await signal({ ...again, charges: [{ n: 3, at: now, usage: { totalTokens: 2 } }] })).code).toBe(0);
    expect((await cost('tenant', tenant)).windows[0]!.usage.totalTokens).toBe(40);
  });
});

describe('a long-lived ledger', () => {
  it('goes on as new past 1,000 events, keeping every total and still knowing a call sent again', async () => {
    const tenant = tenantOf('long');
    await worker.client.run('roomy_spender', 'go', { tenant });
    const ledger = worker.client.temporal.workflow.getHandle(spendLedgerId('tenant', tenant));
    const first = (await ledger.describe()).runId;
    const day = 24 * 60 * 60 * 1000;
    const send = (n: number) =>
      ledger.executeUpdate(chargeSpendUpdate, {
        args: [{ scope: 'tenant', name: tenant, at: Date.now(), windows: [day], run: 'bulk', charges: [{ n, at: Date.now(), usage: { totalTokens: 1 } }] }],
      });
    for (let n = 1; n <= 400; n++) await retryingUpdate(() => send(n), { what: `charge ${n}` });
    expect((await ledger.describe()).runId, 'the ledger went on as new').not.toBe(first);
    // Sent again after the ledger went on as new: still known, not counted.
    expect((await retryingUpdate(() => send(400), { what: 'charge 400 again' })).counted).toEqual({});
    const report = await cost('tenant', tenant);
    expect(report.windows[0]!.usage.totalTokens).toBe(430);
    expect(report).toMatchObject({ charges: 403, repeats: 1 });
  });
});

describe('spend ledgers and dying workers', () => {
  it('with worker processes SIGKILLed while 20 runs charge, every call is counted exactly once', async () => {
    const { dir, configPath } = writeTestConfig('spend-kill', {
      modules: [join(ROOT, 'test', 'fixtures', 'spend-agents.ts')],
      activities: { tool: { startToCloseTimeout: '3 seconds', retry: { initialInterval: '200ms' } } },
    });
    const env = { KEEL_TEST_DIR: dir, KEEL_SPEND_TICK_MS: '300' };
    const start = () => track(spawnKeel(['worker', '--config', configPath], { env }));
    const workers = [start(), start()];
    await Promise.all(workers.map((process) => process.waitFor(/keel: worker \d+ on task queue/)));
    const client = await KeelClient.connect(loadConfig({ path: configPath }));
    const tenant = tenantOf('kill');
    try {
      const handles = await Promise.all(Array.from({ length: 20 }, () => client.start('roomy_spender', 'go', { tenant })));
      // Mid-run (each run's tool rounds take 600 ms): one worker dies, a new one starts; then the other dies.
      await new Promise((resolve) => setTimeout(resolve, 500));
      workers[0]!.kill('SIGKILL');
      const third = start();
      await third.waitFor(/keel: worker \d+ on task queue/);
      workers[1]!.kill('SIGKILL');
      const results = await Promise.all(handles.map((handle) => handle.result()));
      expect(results.map((result) => result.usage.totalTokens)).toEqual(Array(20).fill(30));
      const report = await cost('tenant', tenant);
      expect(report.windows[0]!.usage).toEqual({ inputTokens: 360, outputTokens: 240, totalTokens: 600 });
      expect(report.charges).toBe(60);
    } finally {
      await client.close();
    }
  });
});
