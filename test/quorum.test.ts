/**
 * Many approvers (docs/auth.md): an approver rule may ask for a quorum of distinct verified people,
 * escalate after a while, keep the requester out, and count approvals from distinct groups; each
 * vote is recorded with its verified identity, and the inbox and the Slack notice show who voted
 * and who still may. Tried the way it breaks: one person voting twice, through two surfaces (the
 * UI API and a Slack link), replaying their proof, the requester voting on their own call, votes
 * forged with the `temporal` CLI (update and signal), votes racing each other, a worker SIGKILLed
 * between votes, two people of one group where two groups are asked for, and a hold that runs out
 * of time with too few votes; and two decisions handed to a new worker in one task, on a hold no
 * rule binds (the first one taken, the other refused).
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig, parseConfig } from '../src/config/load';
import type { Hold } from '../src/core/run';
import { Registry } from '../src/registry';
import { vouched } from '../src/security/identity';
import { signingKeysOf } from '../src/security/signing-keys';
import { startUiServer, type UiServer } from '../src/ui/server';
import * as agents from './fixtures/quorum-agents';
import { startTestWorker, type TestWorker } from './support/harness';
import { KeelClient } from '../src/client/keel-client';
import { killAfterEach, runKeel, spawnKeel, writeTestConfig } from './support/processes';
import { temporalCli } from './support/temporal-cli';

const ISSUER = 'https://idp.quorum.test';
const testDir = mkdtempSync(join(tmpdir(), 'keel-quorum-'));
process.env.KEEL_TEST_DIR = testDir;
process.env.KEEL_SIGNING_KEY = 'quorum-test-signing-key-0123456789';
process.env.KEEL_TEST_HOOK_SECRET = 'whsec-quorum-test-0123456789';
const TASK_QUEUE = `quorum-${process.pid}`;

let worker: TestWorker;
let ui: UiServer;
let privateKey: CryptoKey;
let hook: Server;
const slack: Array<{ text: string; blocks: Array<Record<string, unknown>> }> = [];

const token = (subject: string, groups: string[]) =>
  new SignJWT({ groups })
    .setProtectedHeader({ alg: 'RS256', kid: 'q' })
    .setIssuer(ISSUER)
    .setAudience('keel')
    .setSubject(subject)
    .setIssuedAt()
    .setExpirationTime('10 minutes')
    .sign(privateKey);

beforeAll(async () => {
  const pair = await generateKeyPair('RS256');
  privateKey = pair.privateKey;
  writeFileSync(join(testDir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'q', alg: 'RS256', use: 'sig' }] }));
  hook = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      slack.push(JSON.parse(body) as (typeof slack)[number]);
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  const base = { temporal: { address: inject('temporalAddress') }, server: { enabled: false }, taskQueue: TASK_QUEUE };
  ui = await startUiServer({
    config: parseConfig(
      {
        ...base,
        auth: { issuer: ISSUER, audience: 'keel', jwks: 'jwks.json' },
        // Who may decide is the approver rules' to say here (test/tenants.test.ts holds access).
        access: { read: ['*'], steer: ['*'], abort: ['*'], fork: ['*'], decide: ['*'] },
      },
      { baseDir: testDir, env: {} },
    ),
    port: 0,
    token: undefined,
  });
  worker = await startTestWorker(new Registry().addModuleExports(agents), {
    ...base,
    notify: [{ url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/slack`, secret: 'KEEL_TEST_HOOK_SECRET', format: 'slack' }],
    serve: { publicUrl: ui.origin, linkTtl: '10 minutes' },
  });
});
afterAll(async () => {
  await ui?.close();
  await worker?.stop();
  await new Promise((resolve) => hook?.close(resolve));
});

const payments = (runId: string) =>
  (existsSync(join(testDir, 'payments.log')) ? readFileSync(join(testDir, 'payments.log'), 'utf8').trim().split('\n') : []).filter((line) =>
    line.startsWith(`${runId} `),
  ).length;

/** A run of `agent` started for alice (tenant A), waiting on its pay call. */
async function held(agent: string, options: { interruptTimeout?: string } = {}): Promise<string> {
  const { runId } = await worker.client.start(agent, 'pay the acme invoice', { tenant: 'A', owner: 'alice', ...options });
  await expect.poll(async () => (await worker.client.getHandle(runId).status()).interrupts.length, { timeout: 15_000 }).toBe(1);
  return runId;
}

const vote = (runId: string, bearer: string, approved = true) =>
  fetch(`${ui.origin}/api/runs/${encodeURIComponent(runId)}/decisions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-keel-ui': '1', authorization: `Bearer ${bearer}` },
    body: JSON.stringify({ interruptId: 'i1', approved }),
  });
const body = async (response: Response) => (await response.json()) as Record<string, unknown> & { error?: { message: string } };
const holdOf = async (runId: string): Promise<Hold | undefined> => (await worker.client.getHandle(runId).status()).interrupts[0];
const keys = () => signingKeysOf([process.env.KEEL_SIGNING_KEY!], 'test');

describe('a quorum of two, not the requester', () => {
  it('counts distinct verified people once each, across surfaces and replays, and keeps the requester out', async () => {
    const runId = await held('two-of-finance');
    expect((await holdOf(runId))?.votes).toMatchObject({ quorum: 2, approvals: 0, cast: [], mayVote: ['group:finance'], notRequester: true });

    // alice asked for the payment: she may not approve it, though she is in finance.
    const own = await vote(runId, await token('alice', ['finance']));
    expect(own.status).toBe(403);
    expect((await body(own)).error?.message).toBe('hold i1 may not be decided by who asked for it (alice): another approver must vote');

    // carol approves through the UI API: counted, and the hold waits for one more.
    const carolToken = await token('carol', ['finance']);
    const first = await vote(runId, carolToken);
    expect(first.status).toBe(200);
    expect(await body(first)).toMatchObject({ interruptId: 'i1', decided: [], votes: { approvals: 1, quorum: 2, cast: [{ by: 'carol', approved: true }] } });
    expect(payments(runId)).toBe(0);

    // Again through the UI, through the Slack link she was sent, and her proof replayed: each refused.
    const again = await vote(runId, carolToken);
    expect(again.status).toBe(409);
    expect((await body(again)).error?.message).toContain('carol has already voted on hold i1: each person votes once');
    await expect.poll(() => slack.find((message) => message.text.includes('carol approved, waiting for more')), { timeout: 10_000 }).toBeDefined();
    const voted = slack.find((message) => message.text.includes('carol approved, waiting for more'))!;
    expect(JSON.stringify(voted.blocks)).toContain('1 of 2 approvals (carol approved) · may still vote: group:finance');
    const link = /"url":"([^"]+\/decide\/[^"]+)"/.exec(JSON.stringify(voted.blocks))?.[1];
    expect(link).toBeDefined();
    const viaLink = await fetch(link!, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ui.origin, authorization: `Bearer ${carolToken}` },
      body: '',
    });
    expect(await viaLink.text()).toContain('carol has already voted on hold i1');
    const replayed = vouched(keys(), { subject: 'carol', groups: ['finance'] }, runId, { interruptId: 'i1', approved: true });
    await expect(worker.client.getHandle(runId).decide(replayed)).rejects.toThrow(/carol has already voted on hold i1/);

    // Votes forged with the temporal CLI name no verified decider: no quorum from made-up names.
    for (const name of ['dave', 'erin']) {
      const forged = JSON.stringify({ interruptId: 'i1', approved: true, decidedBy: name, decidedByGroups: ['finance'] });
      const update = await temporalCli(['workflow', 'update', 'execute', '--workflow-id', runId, '--name', 'resume', '--input', forged]);
      expect(update.stderr).toContain('names no verified decider');
    }
    // A respond or restart is not a vote.
    const respond = vouched(keys(), { subject: 'dave', groups: ['finance'] }, runId, { interruptId: 'i1', respond: 'paid' });
    await expect(worker.client.getHandle(runId).decide(respond)).rejects.toThrow(/hold i1 is put to a vote \(2 approvals\): send \{ approved: true \}/);

    // The inbox shows the votes (from the memo, no worker needed).
    const inbox = (await (await fetch(`${ui.origin}/api/inbox`, { headers: { authorization: `Bearer ${carolToken}` } })).json()) as {
      holds: Array<{ runId: string; votes?: { approvals: number; mayVote: string[] } }>;
    };
    expect(inbox.holds.find((hold) => hold.runId === runId)?.votes).toMatchObject({ approvals: 1, mayVote: ['group:finance'] });

    // So does keel holds, from the same memo.
    const { configPath } = writeTestConfig('quorum-holds', { taskQueue: TASK_QUEUE });
    const listed = await runKeel(['holds', '--config', configPath]);
    expect(listed.stdout).toContain(`${runId}  i1`);
    expect(listed.stdout).toContain('votes: 1 of 2 approvals (carol approved) · may still vote: group:finance');

    // dave is the second person: the call runs, once, and the record names both votes, verified.
    const second = await vote(runId, await token('dave', ['finance', 'staff']));
    expect(await body(second)).toMatchObject({ decided: ['i1'] });
    expect((await worker.client.getHandle(runId).result()).text).toBe('done: "paid acme"');
    expect(payments(runId)).toBe(1);
    const decision = (await worker.client.getHandle(runId).status()).decisions?.[0];
    expect(decision).toMatchObject({ decision: 'approved', decidedBy: 'dave', verified: true });
    expect(decision?.votes?.map((cast) => [cast.by, cast.approved])).toEqual([
      ['carol', true],
      ['dave', true],
    ]);
    await expect.poll(() => slack.some((message) => message.text.includes('approved by carol, dave')), { timeout: 10_000 }).toBe(true);
  });

  it('one denial among the approvers decides no at once', async () => {
    const runId = await held('two-of-finance');
    const denied = await vote(runId, await token('carol', ['finance']), false);
    expect(await body(denied)).toMatchObject({ decided: ['i1'] });
    await worker.client.getHandle(runId).result();
    expect(payments(runId)).toBe(0);
    expect((await worker.client.getHandle(runId).status()).decisions?.[0]).toMatchObject({ decision: 'denied', decidedBy: 'carol' });
  });

  it('a hold that runs out of time says how far its votes got', async () => {
    const runId = await held('two-of-finance', { interruptTimeout: '3 seconds' });
    expect((await holdOf(runId))?.votes?.expiresAt).toBeDefined();
    expect((await vote(runId, await token('carol', ['finance']))).status).toBe(200);
    await worker.client.getHandle(runId).result();
    expect(payments(runId)).toBe(0);
    expect((await worker.client.getHandle(runId).status()).decisions?.[0]).toMatchObject({
      decision: 'denied',
      decidedBy: 'keel (timeout)',
      route: 'timeout',
      reason: 'no decision within 3 seconds (1 of 2 approvals (carol))',
    });
  });
});

describe('escalation', () => {
  it('after escalateAfter, the hold is also put to escalateTo, whose one approval decides; before, they are refused', async () => {
    const runId = await held('escalating');
    const erin = await token('erin', ['cfo']);
    const early = await vote(runId, erin);
    expect(early.status).toBe(403);
    expect((await body(early)).error?.message).toContain('may be decided only by group:finance; erin (groups: cfo) is not one of them');
    expect((await holdOf(runId))?.votes?.escalateAt).toBeDefined();
    await expect.poll(async () => (await holdOf(runId))?.votes?.escalatedTo, { timeout: 10_000 }).toEqual(['group:cfo']);
    expect((await holdOf(runId))?.votes?.mayVote).toEqual(['group:finance', 'group:cfo']);
    await expect.poll(() => slack.some((message) => message.text.includes('still waits, escalated to group:cfo')), { timeout: 10_000 }).toBe(true);
    expect(await body(await vote(runId, erin))).toMatchObject({ decided: ['i1'] });
    await worker.client.getHandle(runId).result();
    expect(payments(runId)).toBe(1);
    expect((await worker.client.getHandle(runId).status()).decisions?.[0]?.votes).toEqual([expect.objectContaining({ by: 'erin', escalated: true })]);
  });
});

describe('distinct groups', () => {
  it('two of finance are not finance and legal; one person in both counts once', async () => {
    const runId = await held('finance-and-legal');
    // carol votes through the Approve link of the raised hold's Slack notice: counted, and the page says where the vote stands.
    await expect
      .poll(() => slack.some((message) => message.text.includes('waits') && JSON.stringify(message.blocks).includes(runId)), { timeout: 10_000 })
      .toBe(true);
    const raised = slack.find((message) => message.text.includes('waits') && JSON.stringify(message.blocks).includes(runId))!;
    const approve = /"url":"([^"]+\/decide\/[^"]+)","action_id":"approve"/.exec(JSON.stringify(raised.blocks))?.[1];
    const page = await fetch(approve!, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ui.origin, authorization: `Bearer ${await token('carol', ['finance'])}` },
      body: '',
    });
    const text = await page.text();
    expect(text).toContain('Your vote is counted');
    expect(text).toContain('has 1 of 2 approvals and waits for more: group:legal may still vote');
    const sameGroup = await body(await vote(runId, await token('dave', ['finance'])));
    expect(sameGroup).toMatchObject({ decided: [], votes: { approvals: 1, mayVote: ['group:legal'] } });
    expect(payments(runId)).toBe(0);
    // alice is in both: she fills legal (carol keeps finance), and the quorum is met.
    expect(await body(await vote(runId, await token('alice', ['finance', 'legal'])))).toMatchObject({ decided: ['i1'] });
    await worker.client.getHandle(runId).result();
    expect(payments(runId)).toBe(1);
  });
});

describe('votes under attack', () => {
  it('the same person twice and a second person, all at once: one vote each, the call runs once', async () => {
    const runId = await held('two-of-finance');
    const [carol, dave] = await Promise.all([token('carol', ['finance']), token('dave', ['finance'])]);
    const answers = await Promise.all([vote(runId, carol), vote(runId, carol), vote(runId, dave)]);
    // carol's two votes race: one is counted, the other refused (already voted, or the hold already decided).
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 200, 409]);
    await worker.client.getHandle(runId).result();
    expect(payments(runId)).toBe(1);
    const votes = (await worker.client.getHandle(runId).status()).decisions?.[0]?.votes ?? [];
    expect(votes.map((cast) => cast.by).sort()).toEqual(['carol', 'dave']);
  });

  it('a vote replayed by signal with the temporal CLI is refused, and shown in the run’s status', async () => {
    const runId = await held('two-of-finance');
    expect((await vote(runId, await token('carol', ['finance']))).status).toBe(200);
    const replayed = vouched(keys(), { subject: 'carol', groups: ['finance'] }, runId, { interruptId: 'i1', approved: true });
    const signal = await temporalCli(['workflow', 'signal', '--workflow-id', runId, '--name', 'resume', '--input', JSON.stringify(replayed)]);
    expect(signal.code).toBe(0);
    await expect
      .poll(async () => (await worker.client.getHandle(runId).status()).refusedDecision?.reason, { timeout: 10_000 })
      .toContain('carol has already voted on hold i1');
    expect((await holdOf(runId))?.votes?.approvals).toBe(1);
    await worker.client.getHandle(runId).cancel();
  });
});

describe('a worker killed between votes', () => {
  const track = killAfterEach(afterEach);
  /** A config of its own for `keel worker` processes of the quorum agents (started by `startWorker`), and a client of it. */
  const workerAndClient = async (name: string) => {
    const { configPath } = writeTestConfig(name, { modules: [join(__dirname, 'fixtures', 'quorum-agents.ts')] });
    const startWorker = async () => {
      const process = track(spawnKeel(['worker', '--config', configPath]));
      await process.waitFor(/keel: worker \d+ on task queue/);
      return process;
    };
    return { startWorker, client: await KeelClient.connect(loadConfig({ path: configPath })) };
  };
  it('keeps the votes cast: on a new worker the same person is still refused, and the second person decides', async () => {
    const { startWorker, client } = await workerAndClient('quorum-kill');
    const first = await startWorker();
    try {
      const { runId } = await client.start('two-of-finance', 'pay the acme invoice', { tenant: 'A', owner: 'alice' });
      await expect.poll(async () => (await client.getHandle(runId).status()).interrupts.length, { timeout: 15_000 }).toBe(1);
      const carol = vouched(keys(), { subject: 'carol', groups: ['finance'] }, runId, { interruptId: 'i1', approved: true });
      expect(await client.getHandle(runId).decide(carol)).toMatchObject({ decided: [] });
      first.kill('SIGKILL');
      await first.exited;
      // dave's vote is sent while no worker runs the run; carol's again waits for the new worker too.
      const dave = client.getHandle(runId).decide(vouched(keys(), { subject: 'dave', groups: ['finance'] }, runId, { interruptId: 'i1', approved: true }));
      const again = client
        .getHandle(runId)
        .decide(carol)
        .then(
          () => 'counted',
          (error: Error) => error.message,
        );
      await startWorker();
      expect(await dave).toMatchObject({ decided: ['i1'] });
      expect(await again).toMatch(/carol has already voted on hold i1|hold i1 was already decided/);
      expect((await client.getHandle(runId).result()).text).toBe('done: "paid acme"');
      expect(payments(runId)).toBe(1);
      const votes = (await client.getHandle(runId).status()).decisions?.[0]?.votes ?? [];
      expect(votes.map((cast) => cast.by)).toEqual(['carol', 'dave']);
    } finally {
      await client.close();
    }
  });

  it('takes one of two decisions that reach a new worker in one workflow task, on a hold no rule binds', async () => {
    const { startWorker, client } = await workerAndClient('quorum-two-at-once');
    const first = await startWorker();
    try {
      const { runId } = await client.start('anyone-approves', 'pay the acme invoice');
      await expect.poll(async () => (await client.getHandle(runId).status()).interrupts.length, { timeout: 15_000 }).toBe(1);
      first.kill('SIGKILL');
      await first.exited;
      // Both wait for a worker, so the next one is handed both in one workflow task: each passes the validator there.
      const outcome = (decision: { approved: boolean; reason?: string }) =>
        client
          .getHandle(runId)
          .decide({ interruptId: 'i1', ...decision })
          .then(
            () => 'taken',
            (error: Error) => error.message,
          );
      const decided = [outcome({ approved: true }), outcome({ approved: false, reason: 'at the same moment' })];
      await sleep(500);
      await startWorker();
      const outcomes = await Promise.all(decided);
      expect(outcomes.filter((said) => said === 'taken')).toHaveLength(1);
      expect(outcomes.find((said) => said !== 'taken')).toMatch(/hold i1 was already decided/);
      const decisions = (await client.getHandle(runId).status()).decisions ?? [];
      expect(decisions).toHaveLength(1);
      await client
        .getHandle(runId)
        .result()
        .catch(() => undefined);
      expect(payments(runId)).toBe(decisions[0]!.decision === 'approved' ? 1 : 0);
    } finally {
      await client.close();
    }
  });
});
