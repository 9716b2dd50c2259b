/**
 * `keel ui` in a real browser: Debian's chromium driven by playwright-core (never a browser
 * download), a real `keel ui` process and a real worker. `travel` delegates to `clerk`, whose
 * book_train is held for approval: the inbox shows the nested hold (its question, clerk's own
 * agent and run, what the user asked), the runs list nests clerk's run under travel's, a click
 * approves it, and the run view streams the rest to `completed`; a second run is denied with a reason the model then
 * sees; a stand-in output that fails the tool's output schema shows the error at its field and
 * sends nothing. Screenshots of each step go to .keel/artifacts/ui (git-ignored).
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { ROOT, runKeel, spawnKeel, writeTestConfig } from './support/processes';

const CHROMIUM = process.env.KEEL_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = join(ROOT, '.keel', 'artifacts', 'ui');

let browser: Browser;
let page: Page;
let client: KeelClient;
let url: string;
let dir: string;
let configPath: string;
const stopAfterAll: Array<() => unknown> = [];

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const booked = () => (existsSync(join(dir, 'booked.log')) ? readFileSync(join(dir, 'booked.log'), 'utf8').trim().split('\n').filter(Boolean) : []);

/** The root run's pending holds, once its sub-agent's hold has reached it. */
async function nestedHold(runId: string) {
  await expect.poll(async () => (await client.getHandle(runId).status()).interrupts.length, { timeout: 30_000 }).toBe(1);
  return (await client.getHandle(runId).status()).interrupts[0]!;
}

/** The inbox card of `runId`'s hold, once the page has loaded the hold in full (its input, its schemas). */
async function inboxCard(runId: string, input = '"to": "Paris"') {
  await page.goto(url);
  const card = page.locator(`[data-run="${runId}"]`);
  await expect.poll(() => card.count(), { timeout: 15_000 }).toBe(1);
  await expect.poll(() => card.textContent(), { timeout: 20_000 }).toContain(input);
  return card;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium; .ci/run does it)`);
  mkdirSync(SHOTS, { recursive: true });
  // Heartbeats (which carry the streamed text) reach the server at most this often.
  const written = writeTestConfig('ui', {
    worker: { maxHeartbeatThrottleInterval: '200 milliseconds' },
    modules: [
      join(ROOT, 'test', 'fixtures', 'ui-agents.ts'),
      join(ROOT, 'test', 'fixtures', 'spending-agents.ts'),
      join(ROOT, 'test', 'fixtures', 'fork-agents.ts'),
    ],
    // A hold of a middleware's own (kind spending: approve, deny, or a new limit).
    middlewareModules: [join(ROOT, 'examples', 'spending-gate.ts')],
    models: [
      { name: 'scripted/spender', script: [{ toolRequests: [{ name: 'pay', input: { amount: 500 } }] }, { text: 'paid' }] },
      // A model call of a minute, which a steer with "answer now" cancels; the call made again answers.
      { name: 'scripted/ponderer', script: [{ delayMs: 60_000, text: 'still pondering' }, { text: 'the steered answer' }] },
      // A structured answer (output schema below), shown in the run view's Output block.
      { name: 'scripted/forecaster', script: [{ object: { city: 'Oslo', celsius: 4 } }] },
    ],
    agents: [
      { name: 'spender', model: 'scripted/spender', tools: ['pay'], use: [{ name: 'spendingGate', config: { limit: 100 } }] },
      { name: 'ponderer', model: 'scripted/ponderer' },
      {
        name: 'forecaster',
        model: 'scripted/forecaster',
        output: { type: 'object', properties: { city: { type: 'string' }, celsius: { type: 'number' } }, required: ['city', 'celsius'] },
      },
    ],
  });
  dir = written.dir;
  configPath = written.configPath;
  const env = { KEEL_TEST_DIR: dir };
  // Not tracked per test: the worker and the UI serve every test of this file.
  const worker = spawnKeel(['worker', '--config', written.configPath], { env });
  const ui = spawnKeel(['ui', '--config', written.configPath, '--port', '0'], { env });
  stopAfterAll.push(
    () => worker.kill('SIGTERM'),
    () => ui.kill('SIGTERM'),
  );
  await Promise.all([worker.waitFor(/keel: worker \d+ on task queue/), ui.waitFor(/keel: UI at http:\/\/\S+/)]);
  url = /keel: UI at (http:\/\/\S+)/.exec(ui.output())![1]!;
  client = await KeelClient.connect(loadConfig({ path: written.configPath }));
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(url);
  // Once the page knows the server's default name, the name typed here replaces it.
  await page.locator('nav .where', { hasText: written.taskQueue! }).waitFor({ timeout: 15_000 });
  await page.getByTestId('user-name').fill('tester');
  await page.getByTestId('user-name').press('Tab');
  expect(
    await page.evaluate(() => (globalThis as unknown as { localStorage: { getItem: (key: string) => string | null } }).localStorage.getItem('keel.user')),
  ).toBe('tester');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await client?.close();
  for (const stop of stopAfterAll) stop();
});

describe('keel ui in chromium', () => {
  it('starts a run from the playground, shows its sub-agent’s hold in the inbox, approves it with a click, and streams the run to completed', async () => {
    await page.goto(`${url}/start`);
    await page.locator('input[name=agent]').fill('travel');
    await page.locator('textarea[name=prompt]').fill('get me to Paris');
    await shot('1-start');
    await page.getByRole('button', { name: 'Start' }).click();
    await page.waitForURL(/\/runs\/ui-/);
    const runId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
    const hold = await nestedHold(runId);
    expect(hold.path).toHaveLength(1);

    const card = await inboxCard(runId);
    // The question, the sub-agent's own agent and its run (a readable label linking to its view), what the user asked and what clerk said.
    expect(await card.locator('.question').textContent()).toBe('Approve book_train?');
    expect(await card.locator('.agent').textContent()).toBe('agent clerk');
    expect(await card.locator('a.run-link').textContent()).toBe('clerk-1');
    expect(await card.locator('a.run-link').getAttribute('href')).toBe(`/runs/${encodeURIComponent(hold.path![0]!)}`);
    expect(await card.locator('.path a').allTextContents()).toEqual([runId.replace(/^(ui-[0-9a-f]{8})-.*$/, '$1'), 'clerk-1']);
    expect(await card.getByTestId('hold-context').textContent()).toBe(
      'user askedget me to Parisclerk-1 was askedbook 2 seats to Parismodel saidBooking 2 seats to Paris.',
    );
    // The rule that held the call is said once, as the hold's data.
    expect(await card.locator('dl.data').textContent()).toBe('messageTool not in approved list: book_train');
    await shot('2-inbox');

    // The runs list counts the hold once, on clerk's row, under travel's.
    await page.goto(`${url}/runs?status=waiting`);
    const rows = page.locator(`[data-testid=run-row][data-run^="${runId}"]`);
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(2);
    const shown = async (index: number) => [await rows.nth(index).getAttribute('data-depth'), await rows.nth(index).textContent()];
    expect([await shown(0), await shown(1)]).toEqual([
      ['0', expect.stringMatching(new RegExp(`^${runId}travelwaitingget me to Paris`))],
      ['1', expect.stringMatching(/^↳ clerk-1clerkwaiting \(1 held\)/)],
    ]);
    await shot('7-runs');
    await inboxCard(runId);
    await card.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => page.locator('.notice').textContent(), { timeout: 15_000 }).toContain('approved book_train');

    await page.goto(`${url}/runs/${encodeURIComponent(runId)}`);
    // The model's answer comes a few words at a time: the page shows it while it streams.
    await page.getByTestId('streaming').waitFor({ timeout: 30_000 });
    await shot('3-streaming');
    await expect.poll(() => page.getByTestId('run-state').textContent(), { timeout: 30_000 }).toBe('completed');
    await expect.poll(() => page.getByTestId('chat').textContent(), { timeout: 15_000 }).toContain('TRAIN-PARIS');
    expect(await page.getByTestId('children').textContent()).toContain('clerk');
    await shot('4-completed');
    expect(booked()).toEqual(['Paris 2']);
    const child = await client.getHandle(hold.path![0]!).status();
    expect(child.decisions?.[0]).toMatchObject({ decision: 'approved', decidedBy: 'tester' });
  });

  it('denies a hold with a reason, which the model then sees, and runs nothing', async () => {
    const handle = await client.start('travel', 'again to Paris');
    const hold = await nestedHold(handle.runId);
    const card = await inboxCard(handle.runId);
    await card.locator('input.reason').fill('over the travel budget');
    await card.getByRole('button', { name: 'Deny' }).click();
    await page.goto(`${url}/runs/${encodeURIComponent(handle.runId)}`);
    await expect.poll(() => page.getByTestId('run-state').textContent(), { timeout: 30_000 }).toBe('completed');
    await expect.poll(() => page.getByTestId('chat').textContent(), { timeout: 15_000 }).toContain('over the travel budget');
    await shot('5-denied');
    expect((await handle.result()).text).toContain('Reason: over the travel budget');
    expect(booked()).toEqual(['Paris 2']);
    expect((await client.getHandle(hold.path![0]!).status()).decisions?.[0]).toMatchObject({ decision: 'denied', reason: 'over the travel budget' });
  });

  it('shows a stand-in output that fails the tool’s output schema at its field and sends nothing; a valid one answers the call', async () => {
    const handle = await client.start('travel', 'a stand-in, please');
    await nestedHold(handle.runId);
    // keel holds, the inbox in a terminal, lists the same hold as the page's inbox.
    const ofRun = (holds: Array<{ runId: string }>) => holds.filter((hold) => hold.runId === handle.runId);
    const inboxNow = async () => ofRun(((await (await fetch(`${url}/api/inbox`)).json()) as { holds: Array<{ runId: string }> }).holds);
    // The inbox lists from visibility (updated a moment after the run's status), one listing answering for 2 s.
    await expect.poll(async () => (await inboxNow()).length, { timeout: 10_000, interval: 200 }).toBe(1);
    const inbox = await inboxNow();
    const listed = await runKeel(['holds', '--json', '--config', configPath]);
    expect(ofRun((JSON.parse(listed.stdout) as { holds: Array<{ runId: string }> }).holds)).toEqual(inbox);
    const posted: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST') posted.push(request.url());
    });
    const card = await inboxCard(handle.runId);
    await card.getByRole('button', { name: 'respond with a stand-in output' }).click();
    const form = card.getByTestId('respond-form');
    await form.locator('input[name=confirmation]').fill('BY-HAND-1');
    await form.locator('input[name=seats]').fill('0');
    await form.getByRole('button', { name: 'Send stand-in output' }).click();
    const seatsError = form.locator('[data-field=seats] .error');
    await seatsError.waitFor();
    expect(await seatsError.textContent()).toMatch(/minimum|1/);
    await shot('6-respond-invalid');
    expect(posted, 'nothing was sent').toEqual([]);
    expect((await client.getHandle(handle.runId).status()).interrupts).toHaveLength(1);

    await form.locator('input[name=seats]').fill('3');
    await form.getByRole('button', { name: 'Send stand-in output' }).click();
    expect((await handle.result()).text).toContain('BY-HAND-1');
    expect(posted).toHaveLength(1);
    expect(booked(), 'the stand-in answered the call: book_train did not run').toEqual(['Paris 2']);
  });

  it('runs the held call with edited input: the tool gets it', async () => {
    const handle = await client.start('travel', 'four seats this time');
    await nestedHold(handle.runId);
    const card = await inboxCard(handle.runId);
    await card.getByRole('button', { name: 'run with edited input' }).click();
    const form = card.getByTestId('restart-form');
    await form.locator('textarea').fill('{ "to": "Lyon", "seats": 4 }');
    await form.getByRole('button', { name: 'Run with this input' }).click();
    expect((await handle.result()).text).toContain('TRAIN-LYON');
    expect(booked()).toEqual(['Paris 2', 'Lyon 4']);
  });

  it('decides a hold of a middleware’s own with a form of its decision schema, refusing a value that does not fit at its field', async () => {
    const handle = await client.start('spender', 'pay the bill');
    await expect.poll(async () => (await handle.status()).interrupts.length, { timeout: 30_000 }).toBe(1);
    const posted: string[] = [];
    const onRequest = (request: { method: () => string; url: () => string }) => {
      if (request.method() === 'POST') posted.push(request.url());
    };
    page.on('request', onRequest);
    try {
      const card = await inboxCard(handle.runId, '"amount": 500');
      expect(await card.locator('.question').textContent()).toBe('Let pay spend 500? (the limit is 100)');
      // A top-level hold links to its run too, by its short id.
      expect(await card.locator('a.run-link').textContent()).toBe(handle.runId.replace(/^(run-[0-9a-f]{8})-.*$/, '$1'));
      expect(await card.locator('a.run-link').getAttribute('href')).toBe(`/runs/${encodeURIComponent(handle.runId)}`);
      expect(await card.locator('.prompt').textContent()).toBe('pay the bill');
      const form = card.getByTestId('decision-form');
      await form.locator('input[name=limit]').fill('-5');
      await form.getByRole('button', { name: 'Decide' }).click();
      await form.locator('[data-field=limit] .error').waitFor();
      await shot('8-custom-hold');
      expect(posted).toEqual([]);
      await form.locator('input[name=limit]').fill('1000');
      await form.getByRole('button', { name: 'Decide' }).click();
      expect((await handle.result()).text).toBe('paid');
      expect(posted).toHaveLength(1);
      expect((await handle.status()).decisions?.[0]).toMatchObject({ decision: 'restart', payload: { limit: 1000 }, decidedBy: 'tester' });
    } finally {
      page.off('request', onRequest);
    }
  });

  it('steers a running run from its page: answer now cancels the slow model call, and the message is listed as applied', async () => {
    const handle = await client.start('ponderer', 'ponder');
    await expect.poll(async () => (await handle.status()).turn, { timeout: 30_000 }).toBe(1);
    await page.goto(`${url}/runs/${encodeURIComponent(handle.runId)}`);
    const box = page.getByTestId('steer');
    await box.locator('textarea').fill('stop and answer now');
    await box.locator('input[type=checkbox]').check();
    await box.getByRole('button', { name: 'Steer' }).click();
    expect((await handle.result()).text).toBe('the steered answer');
    expect((await handle.status()).steering).toEqual([
      expect.objectContaining({ text: 'stop and answer now', state: 'applied', interrupt: true, cancelledModelCall: true }),
    ]);
    await page.goto(`${url}/runs/${encodeURIComponent(handle.runId)}`);
    await expect.poll(() => page.getByTestId('steering').textContent(), { timeout: 15_000 }).toContain('applied');
    // The run has ended: no box to steer it.
    expect(await page.getByTestId('steer').count()).toBe(0);
    await shot('9-steered');
  });

  it('forks a run from a turn of its page, with a message, opens the fork, and shows the lineage both ways', async () => {
    const source = await client.start('stepper', 'take your steps');
    expect((await source.result()).text).toBe('done [step 1, step 2, step 3] after "take your steps"');
    await page.goto(`${url}/runs/${encodeURIComponent(source.runId)}`);
    // The answer (turn 4) goes on only with a message: the worker's refusal is shown, nothing starts.
    await page.getByTestId('fork-4').click();
    await page.getByTestId('fork-form-4').getByRole('button', { name: 'Fork' }).click();
    await expect.poll(() => page.getByTestId('fork-form-4').locator('.error').textContent(), { timeout: 15_000 }).toMatch(/is its answer: give a message/);
    await page.getByTestId('fork-2').click();
    const form = page.getByTestId('fork-form-2');
    await form.locator('textarea').fill('only one more step');
    await form.getByRole('button', { name: 'Fork' }).click();
    await expect
      .poll(async () => ((await form.locator('.error').count()) ? await form.locator('.error').textContent() : new URL(page.url()).pathname), {
        timeout: 20_000,
      })
      .toMatch(/^\/runs\/fork-/);
    const forkId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
    expect((await client.getHandle(forkId).result()).text).toBe('done [step 1, step 2, step 3] after "only one more step"');
    await expect.poll(() => page.getByTestId('forked-from').textContent(), { timeout: 15_000 }).toBe(`forked from ${source.runId} at turn 2`);
    await page.goto(`${url}/runs/${encodeURIComponent(source.runId)}`);
    await expect.poll(() => page.getByTestId('forks').textContent(), { timeout: 20_000 }).toContain(forkId);
    await shot('10-forked');
  });

  it('shows a completed structured-output run’s answer object in its Output block', async () => {
    const handle = await client.start('forecaster', 'weather in Oslo?');
    expect((await handle.result()).output).toEqual({ city: 'Oslo', celsius: 4 });
    await page.goto(`${url}/runs/${encodeURIComponent(handle.runId)}`);
    const output = page.getByTestId('output');
    await output.waitFor({ timeout: 30_000 });
    await expect.poll(async () => JSON.parse((await output.textContent()) ?? 'null') as unknown, { timeout: 15_000 }).toEqual({ city: 'Oslo', celsius: 4 });
    await shot('10-output');
  });

  it('records a decision under the name "deciding as" shows: in a fresh browser, the server’s default', async () => {
    const handle = await client.start('travel', 'to Paris, decided under the default name');
    const hold = await nestedHold(handle.runId);
    // A browser that never typed a name: the inbox renders before the page knows the server's default.
    const context = await browser.newContext();
    try {
      const fresh = await context.newPage();
      await fresh.goto(url);
      const card = fresh.locator(`[data-run="${handle.runId}"]`);
      await expect.poll(() => card.textContent(), { timeout: 20_000 }).toContain('"to": "Paris"');
      const who = fresh.getByTestId('user-name');
      await expect.poll(() => who.getAttribute('placeholder'), { timeout: 15_000 }).toMatch(/.@./);
      const shown = (await who.getAttribute('placeholder'))!;
      expect(await who.inputValue()).toBe('');
      await card.getByRole('button', { name: 'Deny' }).click();
      await expect.poll(() => fresh.locator('.notice').textContent(), { timeout: 15_000 }).toContain('denied book_train');
      expect((await client.getHandle(hold.path![0]!).status()).decisions?.[0]).toMatchObject({ decision: 'denied', decidedBy: shown });
    } finally {
      await context.close();
    }
    await handle.result();
  });

  it('lists runs, waiting first, and filters them by agent and status', async () => {
    await page.goto(`${url}/runs?agent=travel&status=completed&within=1`);
    await expect.poll(() => page.getByTestId('run-row').count(), { timeout: 15_000 }).toBeGreaterThanOrEqual(4);
    const states = await page.locator('[data-testid=run-row] .state').allTextContents();
    expect(new Set(states)).toEqual(new Set(['completed']));
  });
});
