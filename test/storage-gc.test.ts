/**
 * `keel storage gc` against real runs and a real payload store: a run Temporal deleted (as it
 * does when a closed run's retention ends; here `temporal workflow delete`) loses the blobs only
 * it referred to; a blob it shared with a retained run stays, as do the blobs of a run still
 * waiting on a hold, which then completes; young blobs are kept; --dry-run deletes nothing.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { listExecutions } from '../src/node/list-executions';
import { referencedHashes } from '../src/storage/gc';
import { ROOT, runKeel, spawnKeel, writeTestConfig, type KeelProcess } from './support/processes';
import { startSealedRun } from './support/sealed-run';
import { temporalCli } from './support/temporal-cli';

let worker: KeelProcess;
let client: KeelClient;
let configPath = '';
let store = '';

beforeAll(async () => {
  const written = writeTestConfig('storage-gc', {
    server: { enabled: false },
    modules: [join(ROOT, 'test', 'fixtures', 'secret-agents.ts')],
    // The document (a few KiB) and every conversation that holds it go to the store.
    externalStorage: { threshold: 1024 },
  });
  configPath = written.configPath;
  store = join(written.dir, '.keel', 'payloads');
  worker = spawnKeel(['worker', '--config', configPath]);
  await worker.waitFor(/keel: worker \d+ on task queue/);
  client = await KeelClient.connect(loadConfig({ path: configPath }));
});
afterAll(async () => {
  await client?.close();
  worker?.kill('SIGTERM');
  await worker?.exited;
});

const blobPath = (hash: string) => join(store, hash.slice(0, 2), hash);
const hashesOf = async (runId: string) => referencedHashes(await client.temporal.workflow.getHandle(runId).fetchHistory());

async function gc(...args: string[]): Promise<{ deleted: string[]; stored: number; young: number; runs: number }> {
  const { code, stdout, stderr } = await runKeel(['storage', 'gc', ...args, '--json', '--config', configPath]);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as { deleted: string[]; stored: number; young: number; runs: number };
}

describe('keel storage gc', () => {
  it('deletes what only deleted runs referred to, and keeps what retained and running runs need', async () => {
    const first = await client.start('reader', 'read d1 for the first run');
    const second = await client.start('reader', 'read d1 for the second run');
    await Promise.all([first.result(), second.result()]);
    // A run waiting on a hold whose input (a long prompt) is in the store.
    const waiting = await client.start('guarded-reader', `read d1, about ${'this long question '.repeat(100)}`);
    await expect.poll(async () => (await waiting.status()).interrupts.length, { timeout: 30_000, interval: 250 }).toBe(1);

    const [ofFirst, ofSecond, ofWaiting] = await Promise.all([hashesOf(first.runId), hashesOf(second.runId), hashesOf(waiting.runId)]);
    const shared = [...ofFirst].filter((hash) => ofSecond.has(hash));
    const onlyFirst = [...ofFirst].filter((hash) => !ofSecond.has(hash) && !ofWaiting.has(hash));
    expect(shared.length, 'the document, stored once for both runs').toBeGreaterThan(0);
    expect(onlyFirst.length).toBeGreaterThan(0);
    expect(ofWaiting.size).toBeGreaterThan(0);

    // gc finds runs through visibility, which lags a moment behind a start (what --min-age covers in production).
    const listed = async () => {
      const ids = new Set<string>();
      for await (const execution of listExecutions(client.temporal)) ids.add(execution.workflowId);
      return [first.runId, second.runId, waiting.runId].every((id) => ids.has(id));
    };
    await expect.poll(listed, { timeout: 30_000, interval: 500 }).toBe(true);
    // A run of someone else's in the namespace, its memo sealed with a key this project lacks: gc reads past it.
    const stranger = await startSealedRun('storage-gc');
    // Young blobs are kept by default (1 hour); --dry-run deletes nothing.
    expect((await gc()).deleted).toEqual([]);
    const dry = await gc('--min-age', '0s', '--dry-run');
    for (const hash of [...ofFirst, ...ofSecond, ...ofWaiting]) expect(dry.deleted).not.toContain(hash);

    // The first run's retention ends: Temporal deletes it.
    const deleted = await temporalCli(['workflow', 'delete', '--workflow-id', first.runId]);
    expect(deleted.code, deleted.stderr).toBe(0);
    await expect
      .poll(async () => (await temporalCli(['workflow', 'describe', '--workflow-id', first.runId])).code, { timeout: 90_000, interval: 1000 })
      .not.toBe(0);

    const report = await gc('--min-age', '0s');
    expect(report.deleted.sort()).toEqual([...onlyFirst].sort());
    for (const hash of onlyFirst) expect(existsSync(blobPath(hash))).toBe(false);
    for (const hash of [...shared, ...ofSecond, ...ofWaiting]) expect(existsSync(blobPath(hash)), hash).toBe(true);

    // What remains still reads: the retained run's result, and the waiting run goes on to the end.
    expect((await client.getHandle(second.runId).result()).text).toContain('MODELSECRET-4402');
    const approved = await runKeel(['approve', waiting.runId, 'i1', '--config', configPath]);
    expect(approved.code, approved.stderr).toBe(0);
    expect((await waiting.result()).text).toContain('MODELSECRET-4402');
    await client.temporal.workflow.getHandle(stranger).terminate('storage-gc test done');
  }, 180_000);

  it('says what is wrong with its arguments and with a store it cannot collect', async () => {
    const bad = await runKeel(['storage', 'gc', '--min-age', 'soon', '--config', configPath]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--min-age: a duration such as "1 hour" or "30m", not "soon"');
    const usage = await runKeel(['storage', 'clean', '--config', configPath]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('keel storage gc [--min-age <duration>] [--dry-run] [--json]');
    const none = writeTestConfig('storage-gc-none', { server: { enabled: false }, externalStorage: { driver: 'none' } });
    const refused = await runKeel(['storage', 'gc', '--config', none.configPath]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('keel storage gc collects the file driver\'s store; externalStorage.driver is "none"');
  });
});
