/**
 * The example chat page (examples/chat: React, `useChat` from `@ai-sdk/react`, nothing of keel's)
 * in Debian's chromium against `keel serve`'s chat endpoint, served from another origin as a web
 * app's page is (named in serve.origins), with a `keel worker` process: a chat; a reload
 * mid-answer, after which the text goes on with no gap and no repeat; an approval clicked in the
 * page, which runs the held call once; the worker SIGKILLed mid-turn, after which a new worker
 * finishes the answer the page shows.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load';
import { startUiServer, type UiServer } from '../src/ui/server';
import { answerWords } from './fixtures/chat-agents';
import { buildChatPage, serveStatic } from './support/chat-page';
import { killAfterEach, ROOT, spawnKeel, writeTestConfig, type KeelProcess } from './support/processes';

const CHROMIUM = process.env.KEEL_CHROMIUM ?? '/usr/bin/chromium';
const track = killAfterEach(afterEach);

let browser: Browser;
let page: Page;
let ui: UiServer;
let site: { origin: string; close: () => Promise<void> };
let dir: string;
let configPath: string;

const startWorker = async (): Promise<KeelProcess> => {
  const worker = track(spawnKeel(['worker', '--config', configPath], { env: { KEEL_TEST_DIR: dir, KEEL_CHAT_CHUNK_MS: '150' } }));
  await worker.waitFor(/keel: worker \d+ on task queue/);
  return worker;
};

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium; .ci/run does it)`);
  site = await serveStatic(await buildChatPage());
  ({ dir, configPath } = writeTestConfig('chat-browser', {
    // Heartbeats carry the streamed text: at most this often. A model call's worker that dies is noticed within 2 s.
    worker: { maxHeartbeatThrottleInterval: '100 milliseconds' },
    activities: { model: { heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' } } },
    modules: [join(ROOT, 'test', 'fixtures', 'chat-agents.ts')],
    serve: { agents: ['chat-writer', 'chat-booker'], origins: [site.origin] },
  }));
  ui = await startUiServer({ config: loadConfig({ path: configPath }), port: 0, token: undefined });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  page = await browser.newPage();
});
afterAll(async () => {
  await browser?.close();
  await ui?.close();
  await site?.close();
});

const open = (agent: string, chat = '') => page.goto(`${site.origin}/index.html?agent=${agent}&keel=${encodeURIComponent(ui.origin)}${chat ? `#${chat}` : ''}`);
const say = async (text: string) => {
  await page.locator('input').fill(text);
  await page.locator('button[type=submit]').click();
};
/** The text of the page's last assistant message. */
const answer = () =>
  page
    .locator('section.assistant')
    .last()
    .locator('.text')
    .allTextContents()
    .then((texts) => texts.join(''));

describe('the example chat page', () => {
  it('chats, and a reload mid-answer goes on with no gap and no repeat', async () => {
    await startWorker();
    await open('chat-writer');
    await say('hello');
    const full = answerWords(1).join(' ');
    await expect.poll(answer, { timeout: 20_000 }).toContain('w1.5 ');
    const before = await answer();
    expect(full.startsWith(before)).toBe(true);
    const chat = new URL(page.url()).hash.slice(1);

    await page.reload();
    // Every text the page shows after the reload is the start of the answer: nothing missing, nothing twice.
    const seen: string[] = [];
    await expect
      .poll(
        async () => {
          const now = await answer();
          seen.push(now);
          return now;
        },
        { timeout: 30_000, interval: 100 },
      )
      .toBe(full);
    for (const text of seen) expect(full.startsWith(text)).toBe(true);
    expect(new URL(page.url()).hash.slice(1)).toBe(chat);
    expect(await page.locator('section.user').allTextContents()).toEqual(['hello']);
  });

  it('asks for approval in the page; a click runs the held call once', async () => {
    await startWorker();
    await open('chat-booker', `chat-${Date.now()}`);
    await say('book a train to Bergen');
    const approve = page.getByRole('button', { name: 'Approve' });
    await approve.waitFor({ timeout: 20_000 });
    await approve.click();
    await expect.poll(answer, { timeout: 20_000 }).toBe('done: "ticket to Bergen, seat 12"');
    expect(await page.locator('.tool').getAttribute('data-state')).toBe('output-available');
    const booked = readFileSync(join(dir, 'booked.log'), 'utf8').trim().split('\n');
    expect(booked).toHaveLength(1);
    expect(booked[0]).toMatch(/^session\/chat-booker\/chat-\d+\/run-1 Bergen$/);
  });

  it('a worker SIGKILLed mid-answer: a new worker finishes it, and the page shows it once', async () => {
    const first = await startWorker();
    await open('chat-writer', `chat-${Date.now()}`);
    await say('go on');
    const full = answerWords(1).join(' ');
    await expect.poll(answer, { timeout: 20_000 }).toContain('w1.3 ');
    first.kill('SIGKILL');
    await first.exited;
    await startWorker();
    await expect.poll(answer, { timeout: 45_000 }).toBe(full);
  });
});
