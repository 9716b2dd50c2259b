/**
 * Approvals where people work (docs/notify.md): a run's holds are POSTed to the webhooks of
 * `notify:` (keel's JSON and Slack's blocks), signed with each webhook's secret; a raised hold's
 * notice carries Approve and Deny links to keel serve, which show the hold and decide only when
 * confirmed, once. Tried the way they break: a second use, a tampered or expired link, a link for
 * another input, a confirmation from another origin, a receiver that is down (which delays
 * nothing), and a worker whose webhook secret is unset (refused at start).
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { verifyNoticeSignature } from '../src/features/notify/activities/deliver-notice';
import { parseConfig } from '../src/config/load';
import type { HoldNotice } from '../src/core/hold-notices';
import { Registry } from '../src/registry';
import { inputFingerprint, signDecisionLink } from '../src/security/decision-links';
import { signingKeysOf } from '../src/security/signing-keys';
import { startUiServer, type UiServer } from '../src/ui/server';
import * as agents from './fixtures/notify-agents';
import { startTestWorker, type TestWorker } from './support/harness';
import { freePort } from './support/free-port';
import { killAfterEach, ROOT, runKeel, spawnCommand, writeTestConfig } from './support/processes';
import { temporalCli } from './support/temporal-cli';

const SECRET = 'whsec-notify-test-0123456789';
const SIGNING_KEY = 'notify-test-signing-key-0123456789';
const testDir = mkdtempSync(join(tmpdir(), 'keel-notify-'));
process.env.KEEL_TEST_DIR = testDir;
process.env.KEEL_SIGNING_KEY = SIGNING_KEY;
process.env.KEEL_TEST_HOOK_SECRET = SECRET;

/** A webhook receiver: what it was sent, and whether it answers (503 while down). */
interface Receiver {
  url: string;
  received: Array<{ headers: Record<string, string | string[] | undefined>; body: string }>;
  down: boolean;
  /** Notices it turned away while down (503). */
  refused: string[];
  close: () => Promise<void>;
}

async function receiver(): Promise<Receiver> {
  const state = { received: [] as Receiver['received'], down: false, refused: [] as string[] };
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      if (state.down) {
        state.refused.push(body);
        return void response.writeHead(503).end();
      }
      state.received.push({ headers: request.headers, body });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(state, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

let worker: TestWorker;
let ui: UiServer;
let keelHook: Receiver;
let slackHook: Receiver;

beforeAll(async () => {
  [keelHook, slackHook] = await Promise.all([receiver(), receiver()]);
  const base = { temporal: { address: inject('temporalAddress') }, server: { enabled: false } };
  // keel serve first: the worker's links point at it.
  ui = await startUiServer({ config: parseConfig({ ...base, taskQueue: 'notify-ui' }, { baseDir: ROOT, env: {} }), port: 0, token: undefined });
  worker = await startTestWorker(new Registry().addModuleExports(agents), {
    notify: [
      { url: keelHook.url, secret: 'KEEL_TEST_HOOK_SECRET' },
      { url: slackHook.url, secret: 'KEEL_TEST_HOOK_SECRET', format: 'slack' },
    ],
    serve: { publicUrl: ui.origin, linkTtl: '10 minutes' },
  });
});
afterAll(async () => {
  await worker?.stop();
  await ui?.close();
  await keelHook?.close();
  await slackHook?.close();
});

const invoices = (runId: string) =>
  (existsSync(join(testDir, 'invoices.log')) ? readFileSync(join(testDir, 'invoices.log'), 'utf8').trim().split('\n') : []).filter((line) =>
    line.startsWith(`${runId} `),
  ).length;

/** The keel-format notices of `runId` received so far. */
const noticesOf = (runId: string) =>
  keelHook.received
    .map((request) => ({ ...request, notice: JSON.parse(request.body) as HoldNotice & { id: string; links?: { approve: string; deny: string } } }))
    .filter(({ notice }) => notice.runId === runId);

/** A held run and its hold.raised notice, once the webhook has it. */
async function heldRun() {
  const { runId } = await worker.client.start('notify-held', 'invoice acme');
  await expect.poll(() => noticesOf(runId).some(({ notice }) => notice.type === 'hold.raised'), { timeout: 20_000 }).toBe(true);
  const raised = noticesOf(runId).find(({ notice }) => notice.type === 'hold.raised')!;
  return { runId, raised, links: raised.notice.links! };
}

/** The confirmation a browser sends from the link's page (a form POST from keel serve's own origin). */
const confirm = (link: string, fields: Record<string, string> = {}, origin = ui.origin) =>
  fetch(link, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin }, body: new URLSearchParams(fields).toString() });

describe('notices', () => {
  it('POSTs a raised hold, signed, with links; the link page asks and decides nothing; the confirmation decides once', async () => {
    const { runId, raised, links } = await heldRun();
    expect(raised.headers['x-keel-event']).toBe('hold.raised');
    expect(verifyNoticeSignature({ body: raised.body, header: raised.headers['x-keel-signature'] as string, secret: SECRET })).toBe(true);
    // Another secret, a changed body, or an old signature: not keel's notice.
    expect(verifyNoticeSignature({ body: raised.body, header: raised.headers['x-keel-signature'] as string, secret: 'another-secret' })).toBe(false);
    expect(verifyNoticeSignature({ body: raised.body.replace('acme', 'evil'), header: raised.headers['x-keel-signature'] as string, secret: SECRET })).toBe(
      false,
    );
    expect(verifyNoticeSignature({ body: raised.body, header: raised.headers['x-keel-signature'] as string, secret: SECRET, now: Date.now() + 600_000 })).toBe(
      false,
    );
    expect(raised.notice).toMatchObject({
      type: 'hold.raised',
      agent: 'notify-held',
      hold: { id: 'i1', toolName: 'send_invoice', input: { to: 'acme', cents: 1200 } },
    });
    expect(links.approve).toMatch(new RegExp(`^${ui.origin}/decide/`));

    // Slack's copy: the question, the input, and the two links as buttons.
    await expect.poll(() => slackHook.received.some((request) => request.body.includes(runId)), { timeout: 10_000 }).toBe(true);
    const slack = JSON.parse(slackHook.received.find((request) => request.body.includes(runId))!.body) as {
      blocks: Array<{ type: string; elements?: Array<{ url?: string }> }>;
    };
    expect(slack.blocks.find((block) => block.type === 'actions')?.elements?.map((button) => button.url)).toEqual([links.approve, links.deny]);

    // Opening the link (a GET, as a chat app unfurls it) shows the hold and decides nothing.
    const opened = await fetch(links.approve);
    expect(opened.status).toBe(200);
    const html = await opened.text();
    expect(html).toContain('send_invoice');
    expect(html).toContain('&quot;acme&quot;');
    expect((await worker.client.getHandle(runId).status()).interrupts).toHaveLength(1);

    // From another origin the confirmation is refused before anything is decided.
    expect((await confirm(links.approve, {}, 'http://evil.example')).status).toBe(403);
    expect((await worker.client.getHandle(runId).status()).interrupts).toHaveLength(1);

    const confirmed = await confirm(links.approve);
    expect(confirmed.status).toBe(200);
    expect(await confirmed.text()).toContain('approved');
    expect((await worker.client.getHandle(runId).result()).text).toBe('invoice done');
    expect(invoices(runId)).toBe(1);
    expect((await worker.client.getHandle(runId).status()).decisions?.map((decision) => decision.decidedBy)).toEqual(['link']);

    // A second use, of either link: refused, nothing runs again.
    for (const link of [links.approve, links.deny]) {
      const again = await confirm(link);
      expect(again.status).toBe(410);
      expect(await again.text()).toContain('no longer waits');
    }
    expect(invoices(runId)).toBe(1);
    await expect
      .poll(() => noticesOf(runId).find(({ notice }) => notice.type === 'hold.decided')?.notice.decision?.decidedBy, { timeout: 10_000 })
      .toBe('link');
  });

  it('two confirmations of a link at once (a double click, two people): one decides, the other is refused, the call runs once', async () => {
    const { runId, links } = await heldRun();
    const answers = await Promise.all([confirm(links.approve), confirm(links.approve), confirm(links.deny)]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 410, 410]);
    await worker.client.getHandle(runId).result();
    expect((await worker.client.getHandle(runId).status()).decisions).toHaveLength(1);
    expect(invoices(runId)).toBeLessThanOrEqual(1);
  });

  it('a delivery workflow started with the temporal CLI with a made-up notice posts nothing', async () => {
    const before = keelHook.received.length + slackHook.received.length;
    const forged = await temporalCli([
      'workflow',
      'execute',
      '--type',
      'keelHoldNotice',
      '--task-queue',
      worker.taskQueue,
      '--workflow-id',
      `forged-notice-${Date.now()}`,
      '--input',
      JSON.stringify({ id: 'forged', notice: { type: 'hold.raised', runId: 'nobody' }, targets: 2 }),
    ]);
    expect(forged.code).not.toBe(0);
    expect(`${forged.stdout}${forged.stderr}`).toContain('a hold notice keel does not send');
    expect(keelHook.received.length + slackHook.received.length).toBe(before);
  });

  it("refuses a real notice replayed by a workflow that is not keel's, which schedules deliverHoldNotice on keel's task queue: nothing is posted", async () => {
    const { raised } = await heldRun();
    const before = keelHook.received.length + slackHook.received.length;
    const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    const taskQueue = `foreign-${randomUUID()}`;
    const foreign = await Worker.create({ connection, taskQueue, workflowsPath: join(__dirname, 'fixtures', 'foreign-notice-workflows.ts') });
    try {
      const { id, ...notice } = raised.notice;
      const outcome = await foreign.runUntil(
        worker.client.temporal.workflow.execute('postsNotice', {
          taskQueue,
          workflowId: `foreign-notice-${randomUUID()}`,
          args: [worker.taskQueue, { id: `${id}/again`, notice, target: 0 }],
        }),
      );
      expect(outcome).toBe('PERMISSION_DENIED: activity deliverHoldNotice runs only for keel\'s own runs (it was scheduled by workflow type "postsNotice")');
    } finally {
      await connection.close();
    }
    expect(keelHook.received.length + slackHook.received.length).toBe(before);
  });

  it('a deny link denies, with the reason given on its page', async () => {
    const { runId, links } = await heldRun();
    expect((await confirm(links.deny, { reason: 'wrong customer' })).status).toBe(200);
    await worker.client.getHandle(runId).result();
    expect(invoices(runId)).toBe(0);
    expect((await worker.client.getHandle(runId).status()).decisions).toEqual([
      expect.objectContaining({ decision: 'denied', decidedBy: 'link', reason: 'wrong customer' }),
    ]);
  });

  it('refuses a tampered link, an expired one, and one made for another input; none decides', async () => {
    const { runId, links } = await heldRun();
    const token = links.approve.split('/decide/')[1]!;
    const [header, payload, signature] = token.split('.');
    const tampered = `${ui.origin}/decide/${header}.${payload}.${signature!.slice(0, -2)}${signature!.endsWith('AA') ? 'BB' : 'AA'}`;
    const keys = signingKeysOf([SIGNING_KEY], 'test');
    const expired = `${ui.origin}/decide/${await signDecisionLink(keys, { runId, holdId: 'i1', action: 'approve', input: inputFingerprint({ to: 'acme', cents: 1200 }) }, -1000)}`;
    const otherInput = `${ui.origin}/decide/${await signDecisionLink(keys, { runId, holdId: 'i1', action: 'approve', input: inputFingerprint({ to: 'acme', cents: 1 }) }, 60_000)}`;
    const otherKey = `${ui.origin}/decide/${await signDecisionLink(signingKeysOf(['another-signing-key-0123456789'], 'test'), { runId, holdId: 'i1', action: 'approve', input: inputFingerprint({ to: 'acme', cents: 1200 }) }, 60_000)}`;
    const cases: Array<[string, number, RegExp]> = [
      [tampered, 403, /not a decision link keel signed/],
      [otherKey, 403, /not a decision link keel signed/],
      [expired, 403, /has expired/],
      [otherInput, 410, /another input than this link was made for/],
    ];
    for (const [link, status, message] of cases) {
      for (const response of [await fetch(link), await confirm(link)]) {
        expect(response.status).toBe(status);
        expect(await response.text()).toMatch(message);
      }
    }
    expect((await worker.client.getHandle(runId).status()).interrupts).toHaveLength(1);
    // The real link still works.
    expect((await confirm(links.approve)).status).toBe(200);
    await worker.client.getHandle(runId).result();
    expect(invoices(runId)).toBe(1);
  });

  it('a call restarted with edited input voids the links made for the first input', async () => {
    const { runId, links } = await heldRun();
    await worker.client.getHandle(runId).decide({ interruptId: 'i1', restart: { approved: true }, input: { to: 'acme', cents: 99 }, decidedBy: 'ops' });
    await worker.client.getHandle(runId).result();
    for (const link of [links.approve, links.deny]) {
      const response = await confirm(link);
      expect(response.status).toBe(410);
      expect(await response.text()).toContain('no longer waits');
    }
    // The edited call ran once, as the restart said.
    expect(invoices(runId)).toBe(1);
    await expect
      .poll(() => noticesOf(runId).find(({ notice }) => notice.type === 'hold.decided')?.notice.decision?.decision, { timeout: 10_000 })
      .toBe('restart');
  });

  it('a receiver that is down delays nothing, and gets every notice once it is back', async () => {
    keelHook.down = true;
    const started = Date.now();
    const { runId } = await worker.client.start('notify-held', 'invoice acme');
    await expect.poll(async () => (await worker.client.getHandle(runId).status()).interrupts.length, { timeout: 10_000 }).toBe(1);
    await worker.client.getHandle(runId).decide({ interruptId: 'i1', approved: true, decidedBy: 'ops' });
    expect((await worker.client.getHandle(runId).result()).text).toBe('invoice done');
    expect(Date.now() - started).toBeLessThan(8000);
    // Both notices were tried and turned away while it was down; none was taken.
    await expect
      .poll(() => new Set(keelHook.refused.filter((body) => body.includes(runId)).map((body) => (JSON.parse(body) as HoldNotice).type)).size, {
        timeout: 15_000,
      })
      .toBe(2);
    expect(noticesOf(runId)).toEqual([]);
    keelHook.down = false;
    await expect
      .poll(
        () =>
          noticesOf(runId)
            .map(({ notice }) => notice.type)
            .sort(),
        { timeout: 30_000 },
      )
      .toEqual(['hold.decided', 'hold.raised']);
    expect(noticesOf(runId).find(({ notice }) => notice.type === 'hold.decided')?.notice.decision).toMatchObject({ decision: 'approved', decidedBy: 'ops' });
  });

  it('a hold that expires is said as expired', async () => {
    const { runId } = await worker.client.start('notify-held', 'invoice acme', { interruptTimeout: '1 second' });
    await worker.client.getHandle(runId).result();
    await expect
      .poll(() => noticesOf(runId).find(({ notice }) => notice.type === 'hold.expired')?.notice.decision?.decidedBy, { timeout: 15_000 })
      .toBe('keel (timeout)');
    expect(invoices(runId)).toBe(0);
  });
});

describe('notify config', () => {
  it('a worker whose webhook secret is unset refuses to start, naming it in one line', async () => {
    const { configPath } = writeTestConfig('notify-unset', {
      modules: [join(ROOT, 'test', 'fixtures', 'notify-agents.ts')],
      notify: [{ url: 'http://127.0.0.1:9/hook', secret: 'KEEL_UNSET_HOOK_SECRET' }],
    });
    const started = Date.now();
    const result = await runKeel(['worker', '--config', configPath]);
    expect(result.code).not.toBe(0);
    expect(result.stderr.trim().split('\n')).toEqual([
      'keel: notify[0].secret: the environment variable KEEL_UNSET_HOOK_SECRET is not set (it holds the secret the notices to http://127.0.0.1:9/hook are signed with)',
    ]);
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});

describe('examples/notify/receiver.ts', () => {
  const track = killAfterEach(afterEach);

  it('verifies each notice, prints its links, and refuses a forged one', async () => {
    const port = await freePort();
    const receiver = track(
      spawnCommand(process.execPath, ['--import', 'tsx', join(ROOT, 'examples', 'notify', 'receiver.ts'), String(port)], {
        label: 'examples/notify/receiver.ts',
        env: { KEEL_HOOK_SECRET: SECRET },
      }),
    );
    await receiver.waitFor(/receiving keel notices at/);
    const own = await startTestWorker(new Registry().addModuleExports(agents), {
      notify: [{ url: `http://127.0.0.1:${port}/`, secret: 'KEEL_TEST_HOOK_SECRET' }],
      serve: { publicUrl: ui.origin },
    });
    try {
      const { runId } = await own.client.start('notify-held', 'invoice acme');
      await receiver.waitFor(new RegExp(`hold.raised notify-held ${runId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} i1 send_invoice`));
      await receiver.waitFor(/approve: http:\/\/127\.0\.0\.1:\d+\/decide\//);
      const forged = await fetch(`http://127.0.0.1:${port}/`, {
        method: 'POST',
        headers: { 'x-keel-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` },
        body: '{}',
      });
      expect(forged.status).toBe(401);
      await receiver.waitFor(/refused: a notice whose signature does not verify/);
      await own.client.getHandle(runId).decide({ interruptId: 'i1', approved: false, decidedBy: 'ops' });
      await receiver.waitFor(/hold.decided notify-held .* i1 send_invoice: denied by ops/);
    } finally {
      await own.stop();
    }
  });
});
