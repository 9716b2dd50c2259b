/**
 * Every HTTP server keel starts goes through one hardening layer (src/node/http-guard.ts): `keel
 * ui`, `keel codec-server` and a worker's metrics endpoint, each a real process, are attacked
 * the same way. A page whose name was rebound to 127.0.0.1 (DNS rebinding) sends its own Host;
 * a client sends a body of 64 MiB (declared, or streamed without a length) and gets 413 long
 * before it could send it all; a page of another origin tries a change; off loopback, a server
 * needs its token. What each server is for still works: the page's API, the Temporal Web UI's
 * decode from its own origin, a scrape.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/free-port';
import { runKeel, spawnKeel, writeTestConfig, type KeelProcess } from './support/processes';

const env = { KEEL_TEST_KEY: randomBytes(32).toString('base64') };
/** Where the Temporal Web UI would be: the codec server's one trusted origin. */
const WEB_UI = 'http://127.0.0.1:8233';
const started: KeelProcess[] = [];

/** A server under test: its port, a change it takes, and a legitimate request. */
interface Target {
  name: string;
  port: number;
  /** A request that changes something (or, for the metrics endpoint, any request with a body). */
  change: { path: string; headers: Record<string, string>; body: string };
  /** The path a legitimate GET or the change is checked with. */
  read: string;
}
const targets: Record<'ui' | 'codec' | 'metrics', Target> = {} as Record<'ui' | 'codec' | 'metrics', Target>;

/** One raw request (node:http, so Host and Origin are what the test says, as a browser would send them). */
function send(
  port: number,
  { method = 'GET', path, headers = {}, body }: { method?: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const sent = request({ host: '127.0.0.1', port, method, path, headers: { host: `127.0.0.1:${port}`, ...headers } }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
    });
    sent.on('error', reject);
    sent.end(body);
  });
}

/** The body a client says (or, chunked, seems) to be sending: 64 MiB. */
const TOTAL = 64 * 1024 * 1024;
/** More than any of the three servers takes (ui 2 MiB, codec 1 MiB here, metrics none). */
const OVER_EVERY_LIMIT = 4 * 1024 * 1024;
const CHUNK = 256 * 1024;

/**
 * Starts a body of 64 MiB (with its length declared, or chunked without one), sends at most
 * `sendAtMost` bytes of it and then waits, the request left open: a server that wanted the whole
 * body would never answer, so an answer proves it refused without it. Independent of how fast
 * either side runs on a loaded machine (the answer never races the writes).
 */
function oversized(port: number, { path, headers }: { path: string; headers: Record<string, string> }, chunked: boolean, sendAtMost: number) {
  return new Promise<{ status: number; text: string; written: number }>((resolve, reject) => {
    let written = 0;
    let answered = false;
    const sent = request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path,
      headers: { host: `127.0.0.1:${port}`, ...headers, ...(chunked ? {} : { 'content-length': String(TOTAL) }) },
    });
    const silent = setTimeout(() => {
      sent.destroy();
      reject(new Error(`no answer 15 s after ${written} of ${TOTAL} bytes: the server waits for the rest of the body`));
    }, 15_000);
    sent.on('response', (response) => {
      answered = true;
      clearTimeout(silent);
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => {
        sent.destroy();
        resolve({ status: response.statusCode ?? 0, text, written });
      });
    });
    // The server may close the connection after refusing: writing on fails, which is expected.
    sent.on('error', (error) => (answered ? undefined : (clearTimeout(silent), reject(error))));
    const chunk = Buffer.alloc(CHUNK, 0x20);
    const pump = () => {
      while (!answered && written < sendAtMost) {
        written += chunk.length;
        if (!sent.write(chunk)) return void sent.once('drain', pump);
      }
    };
    pump();
  });
}

beforeAll(async () => {
  const [codecPort, metricsPort] = [await freePort(), await freePort()];
  const { configPath } = writeTestConfig('http-servers', {
    server: { enabled: false },
    ui: { temporalUiUrl: WEB_UI },
    codecServer: { port: codecPort, maxBodyBytes: 1024 * 1024 },
    metrics: { prometheus: `127.0.0.1:${metricsPort}` },
    encryption: { key: 'k1', keys: { k1: { env: 'KEEL_TEST_KEY' } } },
  });
  const ui = spawnKeel(['ui', '--config', configPath, '--port', '0'], { env });
  const codec = spawnKeel(['codec-server', '--config', configPath], { env });
  const worker = spawnKeel(['worker', '--config', configPath, '--allow-empty'], { env });
  started.push(ui, codec, worker);
  await Promise.all([ui.waitFor(/keel: UI at http:\/\/\S+/), codec.waitFor(/keel: codec server at/), worker.waitFor(/keel: worker \d+ on task queue/)]);
  const json = { 'content-type': 'application/json' };
  const plain = { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('"hello"').toString('base64') };
  targets.ui = {
    name: 'keel ui',
    port: Number(new URL(/keel: UI at (http:\/\/\S+)/.exec(ui.output())![1]!).port),
    change: { path: '/api/runs', headers: { ...json, 'x-keel-ui': '1' }, body: JSON.stringify({ agent: 'nobody', prompt: 'hi' }) },
    read: '/api/info',
  };
  targets.codec = {
    name: 'keel codec-server',
    port: codecPort,
    change: { path: '/encode', headers: json, body: JSON.stringify({ payloads: [plain] }) },
    read: '/encode',
  };
  // The metrics endpoint takes no body at all: its "change" is an empty POST.
  targets.metrics = { name: 'keel metrics', port: metricsPort, change: { path: '/metrics', headers: json, body: '' }, read: '/metrics' };
}, 120_000);

afterAll(async () => {
  for (const process of started) process.kill('SIGTERM');
  await Promise.all(started.map((process) => process.exited));
});

describe.each(['ui', 'codec', 'metrics'] as const)('the HTTP guard of %s', (which) => {
  it('refuses a request naming another host (DNS rebinding), even its own kind of request', async () => {
    const { port, change, read, name } = targets[which];
    for (const attempt of [
      { path: read, headers: { host: `attacker.example:${port}` } },
      { method: 'POST', path: change.path, headers: { ...change.headers, host: `attacker.example:${port}` }, body: change.body },
      { path: read, headers: { host: `127.0.0.1:${port + 1}` } },
    ]) {
      const refused = await send(port, attempt);
      expect(refused.status).toBe(421);
      expect(refused.text).toContain(`${name}: unexpected Host header`);
    }
  });

  it('refuses a body over its limit with 413 before it has all of it, declared or streamed', async () => {
    const { port, change, name } = targets[which];
    for (const chunked of [false, true]) {
      const refused = await oversized(port, change, chunked, OVER_EVERY_LIMIT);
      expect(refused.status, `chunked: ${chunked}`).toBe(413);
      expect(refused.text).toContain(`${name}: the request body is over`);
      expect(refused.written).toBeLessThanOrEqual(OVER_EVERY_LIMIT);
    }
    // And it still answers afterwards.
    expect((await send(port, { path: '/' })).status).toBeLessThan(500);
  });

  it('refuses a change from a page of another origin', async () => {
    const { port, change, name } = targets[which];
    // text/plain is what a page may send another origin without asking first (no preflight).
    for (const contentType of ['application/json', 'text/plain']) {
      const refused = await send(port, {
        method: 'POST',
        path: change.path,
        headers: { ...change.headers, 'content-type': contentType, origin: 'https://evil.example' },
        body: change.body,
      });
      expect(refused.status).toBe(403);
      expect(refused.text).toContain(`${name}: a change from origin https://evil.example is refused`);
    }
    // A page of another origin streaming a huge body is refused for its origin before the body is read.
    // Its first chunk is all it sends: the refusal comes without the rest.
    const streamed = await oversized(port, { path: change.path, headers: { ...change.headers, origin: 'https://evil.example' } }, true, CHUNK);
    expect(streamed.status).toBe(403);
    expect(streamed.text).toContain(`${name}: a change from origin https://evil.example is refused`);
    expect(streamed.written).toBe(CHUNK);
  });
});

describe('what each server is for still works', () => {
  it('keel ui: the page’s API from its own address, by any loopback name', async () => {
    const { port } = targets.ui;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const info = await send(port, { path: '/api/info', headers: { host } });
      expect(info.status).toBe(200);
      expect(JSON.parse(info.text)).toHaveProperty('namespace');
    }
    const posted = await send(port, {
      method: 'POST',
      path: '/api/runs',
      headers: { ...targets.ui.change.headers, origin: `http://127.0.0.1:${port}` },
      body: '{}',
    });
    expect(posted.status).toBe(400); // past the guard: the route says what the body lacks
  });

  it('keel codec-server: the Temporal Web UI’s encode and decode from its origin, answered with CORS', async () => {
    const { port, change } = targets.codec;
    const preflight = await send(port, {
      method: 'OPTIONS',
      path: '/decode',
      headers: { origin: WEB_UI, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace' },
    });
    expect(preflight.headers['access-control-allow-origin']).toBe(WEB_UI);
    const encoded = await send(port, { method: 'POST', path: '/encode', headers: { ...change.headers, origin: WEB_UI }, body: change.body });
    expect(encoded.status).toBe(200);
    expect(encoded.headers['access-control-allow-origin']).toBe(WEB_UI);
    const decoded = await send(port, { method: 'POST', path: '/decode', headers: { ...change.headers, origin: WEB_UI }, body: encoded.text });
    expect(JSON.parse(decoded.text)).toEqual(JSON.parse(change.body));
  });

  it('the metrics endpoint: a scrape', async () => {
    const scraped = await send(targets.metrics.port, { path: '/metrics' });
    expect(scraped.status).toBe(200);
    expect(scraped.headers['content-type']).toContain('text/plain');
    expect(scraped.text).toMatch(/^temporal_worker_start_total\{.*\} 1$/m);
  });
});

describe('the metrics endpoint off loopback', () => {
  it('needs KEEL_METRICS_TOKEN (not a short one) to start, and then answers only requests that carry it', async () => {
    const port = await freePort();
    const { configPath } = writeTestConfig('metrics-token', { server: { enabled: false }, metrics: { prometheus: `0.0.0.0:${port}` } });
    const refused = await runKeel(['worker', '--config', configPath, '--allow-empty']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `metrics.prometheus: cannot serve metrics on 0.0.0.0:${port}: keel metrics listens on 0.0.0.0, which is not loopback: set KEEL_METRICS_TOKEN`,
    );

    const short = await runKeel(['worker', '--config', configPath, '--allow-empty'], { env: { KEEL_METRICS_TOKEN: 'guessable' } });
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('keel metrics: KEEL_METRICS_TOKEN is 9 characters; use a long random string (at least 16)');

    const token = randomBytes(24).toString('hex');
    const worker = spawnKeel(['worker', '--config', configPath, '--allow-empty'], { env: { KEEL_METRICS_TOKEN: token } });
    started.push(worker);
    await worker.waitFor(/keel: worker \d+ on task queue/);
    expect((await send(port, { path: '/metrics' })).status).toBe(401);
    expect((await send(port, { path: '/metrics', headers: { authorization: `Bearer ${token.slice(1)}x` } })).status).toBe(401);
    const scraped = await send(port, { path: '/metrics', headers: { authorization: `Bearer ${token}`, host: `worker.example:${port}` } });
    expect(scraped.status).toBe(200);
    expect(scraped.text).toContain('temporal_worker_start_total');
  });
});
