/**
 * `keel codec-server` and the Temporal Web UI: a dev server whose Web UI is pointed at the codec
 * server (server.uiCodecEndpoint), a `keel worker` sealing payloads with `encryption`, and
 * Debian's chromium (playwright-core) opening the run in the Web UI, which shows the prompt and
 * the answer decoded while Temporal only ever held ciphertext. The codec server's own contract:
 * CORS only for the UI's origin, bad bodies refused with why, a token off loopback.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../src/config/load';
import { startDevServer, type DevServer } from '../src/server/dev-server';
import { startCodecServer } from '../src/ui/codec-server';
import { freePort } from './support/free-port';
import { ROOT, runKeel, spawnKeel, writeTestConfig, type KeelProcess } from './support/processes';

const CHROMIUM = process.env.KEEL_CHROMIUM ?? '/usr/bin/chromium';
const PROMPT = 'PROMPTSECRET-5150: read d1';
const env = { KEEL_TEST_KEY: randomBytes(32).toString('base64') };

let server: DevServer;
let codec: KeelProcess;
let worker: KeelProcess;
let browser: Browser;
let configPath = '';
let codecUrl = '';
let uiUrl = '';

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium; .ci/run does it)`);
  const [port, uiPort, codecPort] = [await freePort(), await freePort(), await freePort()];
  codecUrl = `http://127.0.0.1:${codecPort}`;
  uiUrl = `http://127.0.0.1:${uiPort}`;
  server = await startDevServer({ binary: inject('temporalBinary'), port, uiPort, uiCodecEndpoint: codecUrl });
  configPath = writeTestConfig('codec-server', {
    temporal: { address: server.address },
    server: { enabled: false },
    ui: { temporalUiUrl: uiUrl },
    codecServer: { port: codecPort },
    modules: [join(ROOT, 'test', 'fixtures', 'secret-agents.ts')],
    encryption: { key: 'k1', keys: { k1: { env: 'KEEL_TEST_KEY' } } },
  }).configPath;
  codec = spawnKeel(['codec-server', '--config', configPath], { env });
  worker = spawnKeel(['worker', '--config', configPath], { env });
  await Promise.all([codec.waitFor(/keel: codec server at http:\/\/\S+/), worker.waitFor(/keel: worker \d+ on task queue/)]);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  for (const process of [codec, worker]) process?.kill('SIGTERM');
  await Promise.all([codec?.exited, worker?.exited]);
  await server?.stop();
});

describe('keel codec-server with the Temporal Web UI', () => {
  it('shows a run sealed by encryption decoded in the Web UI, and nowhere else', async () => {
    const run = await runKeel(['run', 'reader', PROMPT, '--json', '--config', configPath], { env });
    expect(run.code, run.stderr).toBe(0);
    const { runId } = JSON.parse(run.stdout) as { runId: string };

    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const decodes: string[] = [];
    page.on('request', (request) => {
      if (request.url().startsWith(`${codecUrl}/decode`)) decodes.push(request.method());
    });
    await page.goto(`${uiUrl}/namespaces/default/workflows/${encodeURIComponent(runId)}`);
    // The run's input and result, decoded by the codec server for this page.
    await expect.poll(async () => (await page.content()).includes('PROMPTSECRET-5150'), { timeout: 45_000, interval: 500 }).toBe(true);
    await expect.poll(async () => (await page.content()).includes('MODELSECRET-4402'), { timeout: 20_000, interval: 500 }).toBe(true);
    expect(decodes).toContain('POST');
    await page.screenshot({ path: join(ROOT, '.keel', 'artifacts', 'codec-server-web-ui.png'), fullPage: true }).catch(() => undefined);
    await page.close();

    // Without the codec endpoint, the same Temporal shows only ciphertext.
    const raw = await fetch(`${uiUrl}/api/v1/namespaces/default/workflows/${encodeURIComponent(runId)}/history?maximumPageSize=5`).then((response) =>
      response.text(),
    );
    expect(raw).not.toContain('PROMPTSECRET-5150');
    expect(raw).not.toContain(Buffer.from('PROMPTSECRET-5150').toString('base64').slice(0, 16));
  }, 120_000);

  it('answers CORS only for the Web UI origin, refuses bad bodies with why, and round-trips encode and decode', async () => {
    const preflight = (origin: string) =>
      fetch(`${codecUrl}/decode`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace' },
      });
    expect((await preflight(uiUrl)).headers.get('access-control-allow-origin')).toBe(uiUrl);
    expect((await preflight('http://evil.test')).headers.get('access-control-allow-origin')).toBeNull();

    const post = (path: string, body: unknown) =>
      fetch(`${codecUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-namespace': 'default' }, body: JSON.stringify(body) });
    const plain = { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('"hello"').toString('base64') };
    const encoded = (await (await post('/encode', { payloads: [plain] })).json()) as { payloads: Array<{ metadata: Record<string, string> }> };
    expect(Buffer.from(encoded.payloads[0]!.metadata.encoding!, 'base64').toString()).toBe('binary/encrypted');
    expect(await (await post('/decode', encoded)).json()).toEqual({ payloads: [plain] });

    const bad = await post('/decode', { payloads: 'nope' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toContain('expected { payloads: [{ metadata, data }] } in base64');
    const forged = {
      payloads: [{ ...encoded.payloads[0], metadata: { ...encoded.payloads[0]!.metadata, 'encryption-key-id': Buffer.from('k9').toString('base64') } }],
    };
    const unknownKey = await post('/decode', forged);
    expect(unknownKey.status).toBe(422);
    expect(((await unknownKey.json()) as { error: string }).error).toContain('encrypted with key "k9", which this process does not have');
  });

  it('needs a token off loopback, and then refuses requests without it', async () => {
    const config = loadConfig({ path: configPath });
    process.env.KEEL_TEST_KEY = env.KEEL_TEST_KEY;
    try {
      await expect(startCodecServer({ config, host: '0.0.0.0', port: 0, token: undefined })).rejects.toThrow('set KEEL_CODEC_TOKEN');
      const guarded = await startCodecServer({ config, host: '127.0.0.1', port: 0, token: 'a-long-random-token' });
      try {
        const body = JSON.stringify({ payloads: [] });
        const headers = { 'content-type': 'application/json' };
        expect((await fetch(`${guarded.url}/decode`, { method: 'POST', headers, body })).status).toBe(401);
        const ok = await fetch(`${guarded.url}/decode`, { method: 'POST', headers: { ...headers, authorization: 'Bearer a-long-random-token' }, body });
        expect(await ok.json()).toEqual({ payloads: [] });
      } finally {
        await guarded.close();
      }
      const { code, stderr } = await runKeel(['codec-server', '--config', writeTestConfig('codec-none', { server: { enabled: false } }).configPath]);
      expect(code).toBe(1);
      expect(stderr).toContain('temporal.yaml has no encryption');
    } finally {
      delete process.env.KEEL_TEST_KEY;
    }
  });
});
