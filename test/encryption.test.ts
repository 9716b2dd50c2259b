/**
 * Encrypted payloads (`encryption:` in temporal.yaml), as an attacker with read access to the
 * Temporal server or the payload store would look: real `keel worker` and `keel` CLI processes
 * seal every payload with AES-256-GCM; the history fetched with the `temporal` CLI (no codec) and
 * the files of the payload store hold none of the prompt, the tool output or the model's answer;
 * a run started under key A completes after rotating to key B; a process without the key a
 * payload names fails naming it.
 */
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { replayHistories } from '../src/testing/replay';
import { killAfterEach, ROOT, runKeel, spawnKeel, writeTestConfig } from './support/processes';
import { startSealedRun } from './support/sealed-run';
import { temporalCli } from './support/temporal-cli';

const SECRETS = ['PROMPTSECRET-1209', 'DOCSECRET-7781', 'MODELSECRET-4402'] as const;
const keyA = randomBytes(32).toString('base64');
const keyB = randomBytes(32).toString('hex');

/** Every text in the history as the server holds it: the CLI's JSON, and each payload's bytes decoded from base64. */
function textsOfRawHistory(json: string): string[] {
  const texts = [json];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') {
      for (const [key, field] of Object.entries(value)) {
        if (key === 'data' && typeof field === 'string') texts.push(Buffer.from(field, 'base64').toString('latin1'));
        else walk(field);
      }
    }
  };
  walk(JSON.parse(json));
  return texts;
}

/** The key ids the history's encrypted payloads name. */
function keyIdsOf(json: string): Set<string> {
  const ids = new Set<string>();
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') {
      const id = (value as Record<string, unknown>)['encryption-key-id'];
      if (typeof id === 'string') ids.add(Buffer.from(id, 'base64').toString('utf8'));
      Object.values(value).forEach(walk);
    }
  };
  walk(JSON.parse(json));
  return ids;
}

/** What `keel status --json` prints, as far as these tests read it. */
interface CliStatus {
  status: string;
  interrupts?: Array<{ id: string }>;
  refusedSignals?: Array<{ signal: string; reason: string }>;
}

async function rawHistory(runId: string): Promise<string> {
  // --no-json-shorthand-payloads: every payload as the server stores it, none shown decoded.
  const shown = await temporalCli(['workflow', 'show', '--workflow-id', runId, '--output', 'json', '--no-json-shorthand-payloads']);
  expect(shown.code, shown.stderr).toBe(0);
  return shown.stdout;
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

describe('encryption', () => {
  const keep = killAfterEach(afterEach);
  const env = { KEEL_TEST_KEY_A: keyA, KEEL_TEST_KEY_B: keyB };
  const base = {
    server: { enabled: false },
    modules: [join(ROOT, 'test', 'fixtures', 'secret-agents.ts')],
    // A tool output of a few KiB goes to the payload store.
    externalStorage: { threshold: 1024 },
  };

  it('leaves no prompt, tool output or answer in plaintext in the history or the payload store', async () => {
    const { configPath, dir } = writeTestConfig('encryption', { ...base, encryption: { key: 'a', keys: { a: { env: 'KEEL_TEST_KEY_A' } } } });
    const worker = keep(spawnKeel(['worker', '--config', configPath], { env }));
    await worker.waitFor(/keel: worker \d+ on task queue/);
    const run = await runKeel(['run', 'reader', `${SECRETS[0]}: read d1`, '--json', '--config', configPath], { env });
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { runId: string; text: string; status: string };
    // Whoever has the key reads everything.
    expect(result).toMatchObject({ status: 'completed', text: expect.stringContaining(SECRETS[2]) });

    const history = await rawHistory(result.runId);
    for (const text of textsOfRawHistory(history)) for (const secret of SECRETS) expect(text).not.toContain(secret);
    expect(keyIdsOf(history)).toEqual(new Set(['a']));
    const stored = filesUnder(join(dir, '.keel', 'payloads'));
    expect(stored.length).toBeGreaterThan(0);
    for (const file of stored) {
      const bytes = readFileSync(file).toString('latin1');
      for (const secret of SECRETS) expect(bytes, file).not.toContain(secret);
    }
  });

  it('completes a run started under key A after rotating to key B; a process without key A says so', async () => {
    const keysA = { key: 'a', keys: { a: { env: 'KEEL_TEST_KEY_A' } } };
    const { configPath, dir, taskQueue } = writeTestConfig('encryption-rotation', { ...base, encryption: keysA });
    const before = keep(spawnKeel(['worker', '--config', configPath], { env }));
    await before.waitFor(/keel: worker \d+ on task queue/);
    const started = await runKeel(['run', 'guarded-reader', `${SECRETS[0]}: read d1`, '--detach', '--json', '--config', configPath], { env });
    expect(started.code, started.stderr).toBe(0);
    const { runId } = JSON.parse(started.stdout) as { runId: string };
    await expect
      .poll(async () => JSON.parse((await runKeel(['status', runId, '--json', '--config', configPath], { env })).stdout).interrupts?.length ?? 0, {
        timeout: 30_000,
        interval: 250,
      })
      .toBe(1);
    before.kill('SIGTERM');
    await before.exited;

    // Rotation: key B seals from now on, key A still opens.
    const rotated = join(dir, 'rotated.yaml');
    const config = {
      temporal: loadConfig({ path: configPath }).temporal,
      taskQueue,
      ...base,
      encryption: { key: 'b', keys: { b: { env: 'KEEL_TEST_KEY_B' }, a: { env: 'KEEL_TEST_KEY_A' } } },
    };
    writeFileSync(rotated, stringify({ ...config, temporal: { address: config.temporal.address } }));
    const after = keep(spawnKeel(['worker', '--config', rotated], { env }));
    await after.waitFor(/keel: worker \d+ on task queue/);
    const approved = await runKeel(['approve', runId, 'i1', '--config', rotated], { env });
    expect(approved.code, approved.stderr).toBe(0);
    const watched = await runKeel(['watch', runId, '--json', '--config', rotated], { env });
    expect(JSON.parse(watched.stdout)).toMatchObject({ status: 'completed', text: expect.stringContaining(SECRETS[2]) });
    expect(keyIdsOf(await rawHistory(runId))).toEqual(new Set(['a', 'b']));

    // Only key B: what key A sealed (the run's input) cannot be read, and the error names the key.
    const onlyB = join(dir, 'only-b.yaml');
    writeFileSync(
      onlyB,
      stringify({ ...config, temporal: { address: config.temporal.address }, encryption: { key: 'b', keys: { b: { env: 'KEEL_TEST_KEY_B' } } } }),
    );
    process.env.KEEL_TEST_KEY_B = keyB;
    const client = await KeelClient.connect(loadConfig({ path: onlyB }));
    try {
      const handle = client.temporal.workflow.getHandle(runId);
      await expect(handle.result()).resolves.toBeDefined(); // the result was sealed with B
      const { events } = await handle.fetchHistory();
      const input = events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
      await expect(decodeFromPayloadsAtIndex(client.temporal.options.loadedDataConverter, 0, input)).rejects.toThrow(
        'a payload is encrypted with key "a", which this process does not have (encryption.keys: b); add that key to decrypt it',
      );
    } finally {
      await client.close();
      delete process.env.KEEL_TEST_KEY_B;
    }
  });

  it("lists the namespace from a process without a run's key: keel holds and keel list skip that run's memo, not the listing", async () => {
    const { configPath } = writeTestConfig('encryption-plain', base);
    const worker = keep(spawnKeel(['worker', '--config', configPath]));
    await worker.waitFor(/keel: worker \d+ on task queue/);
    const started = await runKeel(['run', 'guarded-reader', 'read d1', '--detach', '--json', '--config', configPath]);
    const { runId } = JSON.parse(started.stdout) as { runId: string };
    // Another project's run in the namespace, sealed with a key this project does not have.
    const stranger = await startSealedRun('encryption');
    try {
      await expect.poll(async () => (await runKeel(['holds', '--json', '--config', configPath])).stdout, { timeout: 30_000, interval: 500 }).toContain(runId);
      const listed = await runKeel(['list', '--json', '--limit', '500', '--config', configPath]);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toContain(stranger);
      expect(listed.stdout).toContain(runId);
    } finally {
      const plain = await KeelClient.connect(loadConfig({ path: configPath }));
      await plain.temporal.workflow.getHandle(stranger).terminate('test done');
      await plain.getHandle(runId).cancel();
      await plain.close();
    }
  });

  it('refuses a forged encrypted signal or update visibly and the run goes on; a run whose input it cannot open waits for a worker that can', async () => {
    const keysA = { key: 'a', keys: { a: { env: 'KEEL_TEST_KEY_A' } } };
    const { configPath, dir, taskQueue } = writeTestConfig('encryption-forged', { ...base, encryption: keysA });
    const worker = keep(spawnKeel(['worker', '--config', configPath], { env }));
    await worker.waitFor(/keel: worker \d+ on task queue/);
    const started = await runKeel(['run', 'guarded-reader', 'read d1', '--detach', '--json', '--config', configPath], { env });
    expect(started.code, started.stderr).toBe(0);
    const { runId } = JSON.parse(started.stdout) as { runId: string };
    const cliStatus = async () => JSON.parse((await runKeel(['status', runId, '--json', '--config', configPath], { env })).stdout) as CliStatus;
    await expect.poll(async () => (await cliStatus()).interrupts?.length ?? 0, { timeout: 30_000, interval: 250 }).toBe(1);

    // Payloads dressed as keel's sealed ones: a key id nobody has, and garbage under the run's own key.
    const sealedLike = (keyId: string) => [
      '--input-base64',
      '--input-meta',
      'encoding=binary/encrypted',
      '--input-meta',
      `encryption-key-id=${keyId}`,
      '--input-meta',
      'encryption-cipher=AES256GCM',
    ];
    const garbage = randomBytes(64).toString('base64');
    for (const keyId of ['nobody-has-this', 'a']) {
      const sent = await temporalCli(['workflow', 'signal', '--workflow-id', runId, '--name', 'resume', '--input', garbage, ...sealedLike(keyId)]);
      expect(sent.code, sent.stderr).toBe(0);
    }
    const updated = await temporalCli([
      'workflow',
      'update',
      'execute',
      '--workflow-id',
      runId,
      '--name',
      'resume',
      '--input',
      garbage,
      ...sealedLike('nobody-has-this'),
    ]);
    expect(updated.code).not.toBe(0);
    expect(updated.stderr).toContain('could not be decoded');
    await expect.poll(async () => (await cliStatus()).refusedSignals?.length ?? 0, { timeout: 20_000, interval: 250 }).toBe(2);
    const shown = await cliStatus();
    expect(shown).toMatchObject({ status: 'waiting', interrupts: [{ id: 'i1' }] });
    expect(shown.refusedSignals![0]!.reason).toContain('encrypted with key "nobody-has-this", which this process does not have');
    expect(shown.refusedSignals![1]!.reason).toContain('encrypted with key "a" does not verify');
    const approved = await runKeel(['approve', runId, 'i1', '--config', configPath], { env });
    expect(approved.code, approved.stderr).toBe(0);
    const watched = await runKeel(['watch', runId, '--json', '--config', configPath], { env });
    expect(JSON.parse(watched.stdout)).toMatchObject({ status: 'completed' });
    // Its history, refusals included, replays as it ran (the replayer's codec marks what it cannot open, as the worker's did).
    const exported = await runKeel(['history', 'export', runId, '--out', dir, '--config', configPath], { env });
    expect(exported.code, exported.stderr).toBe(0);
    process.env.KEEL_TEST_KEY_A = keyA;
    try {
      await replayHistories([join(dir, `${encodeURIComponent(runId)}.json`)], { config: configPath, baseDir: dir });
    } finally {
      delete process.env.KEEL_TEST_KEY_A;
    }

    // A run sealed under key a, on a queue whose only worker has key b: its input stays unread and the run waits.
    worker.kill('SIGTERM');
    await worker.exited;
    const onlyB = join(dir, 'only-b.yaml');
    const address = loadConfig({ path: configPath }).temporal.address;
    writeFileSync(onlyB, stringify({ ...base, temporal: { address }, taskQueue, encryption: { key: 'b', keys: { b: { env: 'KEEL_TEST_KEY_B' } } } }));
    const withoutA = keep(spawnKeel(['worker', '--config', onlyB], { env }));
    await withoutA.waitFor(/keel: worker \d+ on task queue/);
    const waiting = await runKeel(['run', 'reader', 'read d1', '--detach', '--json', '--config', configPath], { env });
    const waitingId = (JSON.parse(waiting.stdout) as { runId: string }).runId;
    await withoutA.waitFor(/encrypted with key "a", which this process does not have/);
    const described = await temporalCli(['workflow', 'describe', '--workflow-id', waitingId, '--output', 'json']);
    expect(JSON.parse(described.stdout).workflowExecutionInfo.status).toBe('WORKFLOW_EXECUTION_STATUS_RUNNING');
    withoutA.kill('SIGTERM');
    await withoutA.exited;
    keep(spawnKeel(['worker', '--config', configPath], { env }));
    const finished = await runKeel(['watch', waitingId, '--json', '--config', configPath], { env });
    expect(JSON.parse(finished.stdout)).toMatchObject({ status: 'completed' });
  });

  it('refuses a config whose keys cannot be read, naming the key and where it was looked for', async () => {
    const cases: Array<[Record<string, unknown>, Record<string, string>, string]> = [
      [{ key: 'a', keys: { a: { env: 'KEEL_TEST_NO_SUCH_KEY' } } }, {}, 'encryption.keys.a: the environment variable KEEL_TEST_NO_SUCH_KEY is not set'],
      [
        { key: 'a', keys: { a: { env: 'KEEL_TEST_SHORT_KEY' } } },
        { KEEL_TEST_SHORT_KEY: 'c2hvcnQ=' },
        'encryption.keys.a ($KEEL_TEST_SHORT_KEY): an encryption key must be 32 bytes',
      ],
      [{ key: 'a', keys: { a: { file: 'missing.key' } } }, {}, 'encryption.keys.a: cannot read'],
      [{ key: 'c', keys: { a: { env: 'KEEL_TEST_KEY_A' } } }, env, 'encryption.key: "c" is not one of keys'],
    ];
    for (const [encryption, extra, why] of cases) {
      const { configPath } = writeTestConfig('encryption-bad', { ...base, encryption });
      const { code, stderr } = await runKeel(['worker', '--config', configPath], { env: extra });
      expect(code, stderr).toBe(2);
      expect(stderr).toContain(why);
    }
  });
});
