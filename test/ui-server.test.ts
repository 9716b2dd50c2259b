/**
 * The keel ui server's guards, tried as a hostile page or a careless deploy would: a change
 * without the page's header or from another origin, a request naming another Host (DNS
 * rebinding), a non-loopback address without a token, a token only as a cookie the page cannot
 * read; and the config's secrets never reaching the page. Bad input gets a clear error. Also:
 * one watcher per run however many pages follow it, gone when they leave. Against the real dev
 * server, no browser.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../src/config/load';
import { startUiServer, type UiServer } from '../src/ui/server';
import { startTestWorker, type TestWorker } from './support/harness';
import { Registry } from '../src/registry';
import { defineAgent, defineTool } from '../src/define';
import { objectReply, scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { z } from 'zod';
import { budget } from '../src/features/budget/budget';
import { toolApproval } from '../src/features/tool-approval/tool-approval';

const SECRET = 'sk-test-must-never-reach-the-page';
const slow = scriptedModel({ name: 'scripted/ui-slow', script: [{ text: 'done', delayMs: 4000 }] });
const steerable = scriptedModel({ name: 'scripted/ui-steered', script: [{ text: 'slow', delayMs: 60_000 }, { text: 'steered' }] });
const quick = scriptedModel({ name: 'scripted/ui-chat', script: () => ({ text: 'hello from the session' }) });
const structured = scriptedModel({ name: 'scripted/ui-structured', script: () => objectReply({ city: 'Oslo' }) });
const heldTool = defineTool({ name: 'ui_held_tool', description: 'Waits for approval.', input: z.object({}), run: () => 'ran' });
const asker = scriptedModel({
  name: 'scripted/ui-asker',
  script: (request) => (request.messages.at(-1)?.role === 'tool' ? textReply('done') : toolCallReply({ name: heldTool.name, input: {} })),
});
const registry = new Registry().add(
  slow,
  quick,
  steerable,
  defineAgent({ name: 'ui-slow', model: slow.name }),
  defineAgent({ name: 'ui-steered', model: steerable.name }),
  defineAgent({ name: 'ui-chat', model: quick.name, session: 'server' }),
  defineAgent({ name: 'ui-budgeted', model: quick.name, use: [budget({ limit: { totalTokens: 5000 } })] }),
  structured,
  defineAgent({ name: 'ui-structured', model: structured.name, output: z.object({ city: z.string() }) }),
  asker,
  heldTool,
  defineAgent({ name: 'ui-held', model: asker.name, tools: [heldTool], use: [toolApproval()] }),
);

let worker: TestWorker;
let ui: UiServer;

const configFor = (taskQueue: string) =>
  parseConfig(
    {
      temporal: { address: inject('temporalAddress') },
      taskQueue,
      server: { enabled: false },
      models: [{ name: 'remote/secret', provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKey: SECRET }],
    },
    { env: {} },
  );

beforeAll(async () => {
  worker = await startTestWorker(registry);
  ui = await startUiServer({ config: configFor(worker.taskQueue), port: 0, token: undefined });
});
afterAll(async () => {
  await ui?.close();
  await worker?.stop();
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${ui.origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-keel-ui': '1', ...headers }, body: JSON.stringify(body) });

describe('keel ui server', () => {
  it('serves the page and the API on loopback; the config’s secrets never reach it', async () => {
    const page = await fetch(ui.origin);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app">');
    const info = await fetch(`${ui.origin}/api/info`);
    const text = await info.text();
    expect(Object.keys(JSON.parse(text) as object).sort()).toEqual(['address', 'agents', 'namespace', 'taskQueue', 'temporalUiUrl', 'user']);
    expect(text).not.toContain(SECRET);
  });

  it('refuses a change without the page’s header, or sent from another origin', async () => {
    const handle = await worker.client.start('ui-slow', 'hi');
    const bare = await fetch(`${ui.origin}/api/runs/${handle.runId}/abort`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(bare.status).toBe(403);
    expect(((await bare.json()) as { error: { message: string } }).error.message).toContain('x-keel-ui');
    const crossSite = await post(`/api/runs/${handle.runId}/abort`, {}, { origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);
    expect(((await crossSite.json()) as { error: { message: string } }).error.message).toContain('https://evil.example');
    expect((await handle.status()).state).toBe('running');
    expect((await post(`/api/runs/${handle.runId}/abort`, {})).status).toBe(200);
    await expect(handle.result()).rejects.toThrow();
  });

  it('refuses a request naming another host (DNS rebinding)', async () => {
    const { port } = new URL(ui.origin);
    // fetch sets Host from the URL; a raw request says what a rebinding page's browser would send.
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const sent = request({ host: '127.0.0.1', port: Number(port), path: '/api/info', headers: { host: `attacker.example:${port}` } }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      sent.on('error', reject);
      sent.end();
    });
    expect(status).toBe(421);
  });

  it('says what was wrong with bad input: an unknown field, a malformed decision, an unknown interrupt, a bad filter', async () => {
    const message = async (response: Response) => ((await response.json()) as { error: { message: string } }).error.message;
    const unknownField = await post('/api/runs', { agent: 'ui-slow', prompt: 'hi', extra: 1 });
    expect(unknownField.status).toBe(400);
    expect(await message(unknownField)).toContain('extra');
    const handle = await worker.client.start('ui-slow', 'hi');
    const malformed = await post(`/api/runs/${handle.runId}/decisions`, { interruptId: 'i1', approved: 'yes' });
    expect(malformed.status).toBe(400);
    expect(await message(malformed)).toContain('approved: expected boolean');
    const claimed = await post(`/api/runs/${handle.runId}/decisions`, { interruptId: 'i1', approved: true, forwardedFrom: 'some-parent' });
    expect(claimed.status).toBe(400);
    expect(await message(claimed)).toContain('forwardedFrom and decidedBy are set by keel');
    const impersonated = await post(`/api/runs/${handle.runId}/decisions`, { interruptId: 'i1', approved: true, decidedBy: 'the-ceo' });
    expect(impersonated.status).toBe(400);
    const unknown = await post(`/api/runs/${handle.runId}/decisions`, { interruptId: 'i9', approved: true });
    expect(unknown.status).toBeGreaterThanOrEqual(400);
    expect(await message(unknown)).toContain('i9');
    const badFilter = await fetch(`${ui.origin}/api/runs?status=sleeping`);
    expect(badFilter.status).toBe(400);
    expect(await message(badFilter)).toContain('unknown status "sleeping"');
    const badSince = await fetch(`${ui.origin}/api/runs?since=yesterday`);
    expect(badSince.status).toBe(400);
    expect(await message(badSince)).toContain('since: an ISO 8601 time');
    const future = (await (await fetch(`${ui.origin}/api/runs?agent=ui-slow&since=${new Date(Date.now() + 3_600_000).toISOString()}`)).json()) as {
      runs: unknown[];
    };
    expect(future.runs).toEqual([]);
    const recent = async () =>
      (
        (await (await fetch(`${ui.origin}/api/runs?agent=ui-slow&since=${new Date(Date.now() - 3_600_000).toISOString()}`)).json()) as {
          runs: Array<{ runId: string }>;
        }
      ).runs;
    // Visibility lists a new run a moment after it started.
    await expect.poll(async () => (await recent()).map((run) => run.runId)).toContain(handle.runId);
    expect((await fetch(`${ui.origin}/api/nothing`)).status).toBe(404);
    await handle.cancel();
  });

  it('records a decision under the name the page shows: its default (from /api/info) when none is sent, else the name sent', async () => {
    const { user } = (await (await fetch(`${ui.origin}/api/info`)).json()) as { user: string };
    for (const [sent, recorded] of [
      [undefined, user],
      ['Ada Lovelace', 'Ada Lovelace'],
    ] as const) {
      const handle = await worker.client.start('ui-held', 'go');
      await expect.poll(async () => (await handle.status()).interrupts.length, { timeout: 20_000 }).toBe(1);
      const decided = await post(`/api/runs/${handle.runId}/decisions`, { interruptId: 'i1', approved: true, ...(sent ? { user: sent } : {}) });
      expect(decided.status, await decided.clone().text()).toBe(200);
      expect((await handle.result()).text).toBe('done');
      expect((await handle.status()).decisions?.[0]).toMatchObject({ decision: 'approved', decidedBy: recorded });
    }
  });

  it('steers a running run (with the page’s header only), says what was wrong with bad input, and refuses a run that has ended', async () => {
    const message = async (response: Response) => ((await response.json()) as { error: { message: string } }).error.message;
    const handle = await worker.client.start('ui-steered', 'hi');
    await expect.poll(async () => (await handle.status()).turn, { timeout: 20_000, interval: 50 }).toBe(1);
    const bare = await fetch(`${ui.origin}/api/runs/${handle.runId}/steer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"text":"x"}',
    });
    expect(bare.status).toBe(403);
    const empty = await post(`/api/runs/${handle.runId}/steer`, { text: '' });
    expect(empty.status).toBe(400);
    expect(await message(empty)).toBe('invalid steer: text: must not be empty');
    const extra = await post(`/api/runs/${handle.runId}/steer`, { text: 'x', id: 'mine' });
    expect(extra.status).toBe(400);
    expect(await message(extra)).toContain('id');
    const steered = await post(`/api/runs/${handle.runId}/steer`, { text: 'answer now', interrupt: true });
    expect(steered.status).toBe(200);
    expect(await steered.json()).toMatchObject({ text: 'answer now', state: 'pending', interrupt: true, cancelledModelCall: true });
    expect((await handle.result()).text).toBe('steered');
    const late = await post(`/api/runs/${handle.runId}/steer`, { text: 'too late' });
    expect(late.status).toBeGreaterThanOrEqual(400);
    expect(await message(late)).toBe(`run "${handle.runId}" has ended (completed); it takes no more steering`);
  });

  it('starts a run, or a turn of a session, from the playground', async () => {
    const started = (await (await post('/api/runs', { agent: 'ui-slow', prompt: 'hi' })).json()) as { runId: string };
    expect(started.runId).toMatch(/^ui-/);
    await worker.client.getHandle(started.runId).cancel();
    const turn = await post('/api/runs', { agent: 'ui-chat', prompt: 'hi', sessionId: 'ui-playground' });
    expect(turn.status).toBe(200);
    const { runId, sessionId } = (await turn.json()) as { runId: string; sessionId: string };
    expect(sessionId).toBe('ui-playground');
    expect((await worker.client.getHandle(runId).result()).text).toBe('hello from the session');
    const view = (await (await fetch(`${ui.origin}/api/runs/${encodeURIComponent(runId)}`)).json()) as { status: { state: string; text: string } };
    expect(view.status).toMatchObject({ state: 'completed', text: 'hello from the session' });
  });

  it('shows a run’s budget limit beside what it spent; a run without one shows none', async () => {
    const budgeted = await worker.client.start('ui-budgeted', 'hi');
    await budgeted.result();
    const view = (await (await fetch(`${ui.origin}/api/runs/${budgeted.runId}`)).json()) as {
      budget?: { limit: Record<string, number> };
      status: { usage: object };
    };
    expect(view.budget).toEqual({ limit: { totalTokens: 5000 } });
    const slowRun = await worker.client.start('ui-slow', 'hi');
    const slowView = (await (await fetch(`${ui.origin}/api/runs/${slowRun.runId}`)).json()) as { budget?: unknown };
    expect(slowView.budget).toBeUndefined();
    await slowRun.cancel();
  });

  it('gives the run view a structured answer in the status it shows', async () => {
    const run = await worker.client.start('ui-structured', 'where?');
    await run.result();
    const view = (await (await fetch(`${ui.origin}/api/runs/${run.runId}`)).json()) as { status: { output?: unknown } };
    expect(view.status.output).toEqual({ city: 'Oslo' });
  });

  it('follows a run once however many pages watch it, and stops when they leave', async () => {
    const handle = await worker.client.start('ui-slow', 'hi');
    const pages = Array.from({ length: 3 }, () => new AbortController());
    const streams = await Promise.all(pages.map((page) => fetch(`${ui.origin}/api/runs/${handle.runId}/events`, { signal: page.signal })));
    expect(streams.map((stream) => stream.headers.get('content-type'))).toEqual(Array(3).fill('text/event-stream'));
    await expect.poll(() => ui.watched()).toBe(1);
    for (const page of pages) page.abort();
    await expect.poll(() => ui.watched(), { timeout: 20_000 }).toBe(0);
    await handle.cancel();
  });
});

describe('keel ui off loopback', () => {
  it('refuses to start without a token, saying how', async () => {
    await expect(startUiServer({ config: configFor('ui-token'), host: '0.0.0.0', port: 0, token: undefined })).rejects.toThrow(
      /not loopback: set KEEL_UI_TOKEN/,
    );
  });

  it('with a token: refuses requests without it, takes it once in the address and keeps it in an HttpOnly cookie', async () => {
    const token = 'a-long-random-token-for-the-test';
    const guarded = await startUiServer({ config: configFor(worker.taskQueue), host: '0.0.0.0', port: 0, token });
    try {
      const port = new URL(guarded.origin).port;
      const base = `http://127.0.0.1:${port}`;
      expect(guarded.url).toContain(`?token=${token}`);
      const without = await fetch(`${base}/api/info`);
      expect(without.status).toBe(401);
      expect(await without.text()).toContain('needs its token');
      expect((await fetch(`${base}/api/info`, { headers: { authorization: 'Bearer wrong-token-of-the-same-length!' } })).status).toBe(401);
      const given = await fetch(`${base}/?token=${token}`, { redirect: 'manual' });
      expect(given.status).toBe(302);
      const cookie = given.headers.get('set-cookie')!;
      expect(cookie).toMatch(/HttpOnly/i);
      expect(cookie).toMatch(/SameSite=Strict/i);
      expect((await fetch(`${base}/api/info`, { headers: { cookie: cookie.split(';')[0]! } })).status).toBe(200);
      expect((await fetch(`${base}/api/info`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    } finally {
      await guarded.close();
    }
  });
});
