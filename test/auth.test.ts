/**
 * Approvers keel can vouch for (docs/auth.md): keel serve verifies an OIDC bearer token (issuer,
 * audience, expiry, against the issuer's JWKS) or a trusted proxy's user; a decision is recorded
 * as the verified subject with a proof the run checks against the agent's approver rules. Tried
 * the way it breaks: bob outside the group, a decision forged with the `temporal` CLI (update
 * and signal), a made-up proof, an expired token, a token for another audience, a typed name.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { chromium } from 'playwright-core';
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../src/config/load';
import type { KeelConfigInput } from '../src/config/schema';
import { Registry } from '../src/registry';
import { startUiServer, type UiServer } from '../src/ui/server';
import * as agents from './fixtures/auth-agents';
import { startTestWorker, type TestWorker } from './support/harness';
import { devIssuerTokens } from './support/dev-issuer';
import { temporalCli } from './support/temporal-cli';

const ISSUER = 'https://idp.keel.test';
const CHROMIUM = process.env.KEEL_CHROMIUM ?? '/usr/bin/chromium';
const testDir = mkdtempSync(join(tmpdir(), 'keel-auth-'));
process.env.KEEL_TEST_DIR = testDir;
process.env.KEEL_SIGNING_KEY = 'auth-test-signing-key-0123456789';

let worker: TestWorker;
let ui: UiServer;
let privateKey: CryptoKey;

/** A token of the test issuer for `subject`, in `groups`. */
const token = (subject: string, groups: string[], { audience = 'keel', expires = '10 minutes' }: { audience?: string; expires?: string | number } = {}) =>
  new SignJWT({ groups })
    .setProtectedHeader({ alg: 'RS256', kid: 'test' })
    .setIssuer(ISSUER)
    .setAudience(audience)
    .setSubject(subject)
    .setIssuedAt()
    .setExpirationTime(expires)
    .sign(privateKey);

const serve = (auth: KeelConfigInput['auth']) =>
  startUiServer({
    config: parseConfig(
      {
        temporal: { address: inject('temporalAddress') },
        taskQueue: worker.taskQueue,
        server: { enabled: false },
        auth,
        // These runs are the worker's own (started for no one): who may decide is the approver rules' to say here (test/tenants.test.ts holds access).
        access: { read: ['*'], steer: ['*'], abort: ['*'], fork: ['*'], decide: ['*'] },
        modules: [join(__dirname, 'fixtures', 'auth-agents.ts')],
        serve: { agents: ['travel-chat'] },
      },
      { baseDir: testDir, env: {} },
    ),
    port: 0,
    token: undefined,
  });

beforeAll(async () => {
  const pair = await generateKeyPair('RS256');
  privateKey = pair.privateKey;
  writeFileSync(join(testDir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'test', alg: 'RS256', use: 'sig' }] }));
  worker = await startTestWorker(new Registry().addModuleExports(agents));
  ui = await serve({ issuer: ISSUER, audience: 'keel', jwks: 'jwks.json' });
});
afterAll(async () => {
  await ui?.close();
  await worker?.stop();
});

const trains = (runId: string) =>
  (existsSync(join(testDir, 'trains.log')) ? readFileSync(join(testDir, 'trains.log'), 'utf8').trim().split('\n') : []).filter((line) =>
    line.startsWith(`${runId} `),
  ).length;

/** A run of `travel` waiting for approval of book_train. */
async function heldTravel(): Promise<string> {
  const { runId } = await worker.client.start('travel', 'book me a train');
  await expect.poll(async () => (await worker.client.getHandle(runId).status()).interrupts.length, { timeout: 15_000 }).toBe(1);
  return runId;
}

const decide = (runId: string, bearer: string | undefined, body: Record<string, unknown> = { interruptId: 'i1', approved: true }, origin = ui.origin) =>
  fetch(`${origin}/api/runs/${encodeURIComponent(runId)}/decisions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-keel-ui': '1', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
    body: JSON.stringify(body),
  });
const messageOf = async (response: Response) => ((await response.json()) as { error: { message: string } }).error.message;

describe('OIDC tokens', () => {
  it('refuses a request without a token, with an expired one, or one for another audience, in one line', async () => {
    const cases: Array<[string | undefined, RegExp]> = [
      [undefined, /^send an OIDC token of your issuer/],
      [await token('alice', ['travel-admins'], { expires: Math.floor(Date.now() / 1000) - 60 }), /^the token has expired/],
      [
        await token('alice', ['travel-admins'], { audience: 'another-app' }),
        /^the token is for another audience \("another-app"\); keel serve takes tokens for "keel"$/,
      ],
      ['not.a.token', /^the token does not verify against the issuer's keys/],
    ];
    for (const [bearer, expected] of cases) {
      const response = await fetch(`${ui.origin}/api/info`, { headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });
      expect(response.status).toBe(401);
      expect(await messageOf(response)).toMatch(expected);
    }
  });

  it('shows the verified subject as who decides, and takes no typed name', async () => {
    const alice = await token('alice', ['travel-admins']);
    const info = (await (await fetch(`${ui.origin}/api/info`, { headers: { authorization: `Bearer ${alice}` } })).json()) as {
      user: string;
      verified?: boolean;
    };
    expect(info).toMatchObject({ user: 'alice', verified: true });
    const runId = await heldTravel();
    const typed = await decide(runId, alice, { interruptId: 'i1', approved: true, user: 'mallory' });
    expect(typed.status).toBe(400);
    expect(await messageOf(typed)).toBe('decisions are recorded as your verified identity (alice): send no user');
    expect((await worker.client.getHandle(runId).status()).interrupts).toHaveLength(1);
  });
});

describe('approver rules', () => {
  it('alice, in travel-admins, approves: the call runs once, recorded as alice, verified', async () => {
    const runId = await heldTravel();
    const response = await decide(runId, await token('alice', ['travel-admins', 'staff']));
    expect(response.status).toBe(200);
    expect((await worker.client.getHandle(runId).result()).text).toBe('travel done');
    expect(trains(runId)).toBe(1);
    expect((await worker.client.getHandle(runId).status()).decisions).toEqual([
      expect.objectContaining({ decision: 'approved', decidedBy: 'alice', verified: true }),
    ]);
  });

  it('bob, not in travel-admins, is refused with why, and nothing runs', async () => {
    const runId = await heldTravel();
    const response = await decide(runId, await token('bob', ['sales']));
    expect(response.status).toBe(403);
    expect(await messageOf(response)).toContain('hold i1 (book_train) may be decided only by group:travel-admins; bob (groups: sales) is not one of them');
    const status = await worker.client.getHandle(runId).status();
    expect(status.interrupts).toHaveLength(1);
    expect(status.refusedDecision?.reason).toContain('bob (groups: sales) is not one of them');
    expect(trains(runId)).toBe(0);
  });

  it('a decision sent straight to Temporal (the temporal CLI) names no verified decider and decides nothing', async () => {
    const runId = await heldTravel();
    const forged = JSON.stringify({ interruptId: 'i1', approved: true, decidedBy: 'alice', decidedByGroups: ['travel-admins'] });
    const update = await temporalCli(['workflow', 'update', 'execute', '--workflow-id', runId, '--name', 'resume', '--input', forged]);
    expect(update.code).not.toBe(0);
    expect(update.stderr).toContain('may be decided only by group:travel-admins');
    const signal = await temporalCli(['workflow', 'signal', '--workflow-id', runId, '--name', 'resume', '--input', forged]);
    expect(signal.code).toBe(0);
    await expect
      .poll(async () => (await worker.client.getHandle(runId).status()).refusedDecision?.reason, { timeout: 10_000 })
      .toContain('names no verified decider');
    // A made-up proof: refused by the run, which checks it with the workers' key.
    const madeUp = await temporalCli([
      'workflow',
      'update',
      'execute',
      '--workflow-id',
      runId,
      '--name',
      'resume',
      '--input',
      JSON.stringify({ interruptId: 'i1', approved: true, decidedBy: 'alice', decidedByGroups: ['travel-admins'], decidedByProof: 'v1.AAAA' }),
    ]);
    expect(madeUp.code).not.toBe(0);
    expect(madeUp.stderr).toContain('does not verify');
    expect((await worker.client.getHandle(runId).status()).interrupts).toHaveLength(1);
    expect(trains(runId)).toBe(0);
    // alice's own decision still goes through.
    expect((await decide(runId, await token('alice', ['travel-admins']))).status).toBe(200);
    await worker.client.getHandle(runId).result();
    expect(trains(runId)).toBe(1);
  });

  it('a proof is for one decision: alice’s approval replayed as a denial, or for another hold, does not verify', async () => {
    const runId = await heldTravel();
    // What keel serve would sign for alice approving, sent by hand as a denial.
    const { vouched } = await import('../src/security/identity');
    const { signingKeysOf } = await import('../src/security/signing-keys');
    const keys = signingKeysOf([process.env.KEEL_SIGNING_KEY!], 'test');
    const approval = vouched(keys, { subject: 'alice', groups: ['travel-admins'] }, runId, { interruptId: 'i1', approved: true });
    await expect(worker.client.getHandle(runId).decide({ ...approval, approved: false })).rejects.toThrow(/does not verify/);
    const elsewhere = vouched(keys, { subject: 'alice', groups: ['travel-admins'] }, 'another-run', { interruptId: 'i1', approved: true });
    await expect(worker.client.getHandle(runId).decide(elsewhere)).rejects.toThrow(/does not verify/);
    expect(trains(runId)).toBe(0);
    await worker.client.getHandle(runId).decide(approval);
    await worker.client.getHandle(runId).result();
    expect(trains(runId)).toBe(1);
  });
});

describe('a trusted proxy', () => {
  it('takes the user the proxy names, from the proxy’s address only', async () => {
    const proxied = await serve({ trustedProxy: { header: 'x-forwarded-user', groupsHeader: 'x-forwarded-groups', from: ['127.0.0.1'] } });
    const elsewhere = await serve({ trustedProxy: { header: 'x-forwarded-user', from: ['10.1.2.3'] } });
    try {
      const headers = { 'x-forwarded-user': 'carol', 'x-forwarded-groups': 'travel-admins, ops' };
      expect(await (await fetch(`${proxied.origin}/api/info`, { headers })).json()).toMatchObject({ user: 'carol', verified: true });
      const runId = await heldTravel();
      const response = await fetch(`${proxied.origin}/api/runs/${encodeURIComponent(runId)}/decisions`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'x-keel-ui': '1' },
        body: JSON.stringify({ interruptId: 'i1', approved: true }),
      });
      expect(response.status).toBe(200);
      await worker.client.getHandle(runId).result();
      expect((await worker.client.getHandle(runId).status()).decisions).toEqual([expect.objectContaining({ decidedBy: 'carol', verified: true })]);
      // keel's own page behind the proxy: it shows the verified name, with nothing to type.
      const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
      try {
        const page = await browser.newPage({ extraHTTPHeaders: headers });
        await page.goto(proxied.origin);
        await expect.poll(() => page.locator('.who').textContent(), { timeout: 15_000 }).toBe('deciding as carol (verified)');
        expect(await page.locator('.who input').count()).toBe(0);
      } finally {
        await browser.close();
      }
      const refused = await fetch(`${elsewhere.origin}/api/info`, { headers });
      expect(refused.status).toBe(401);
      expect(await messageOf(refused)).toMatch(/^requests must come through the trusted proxy \(auth\.trustedProxy\.from\); this one came from 127\.0\.0\.1$/);
    } finally {
      await proxied.close();
      await elsewhere.close();
    }
  });
});

describe('a chat with auth on', () => {
  /** Sends a chat message as `bearer`, then answers the hold it asks about; the answer's response. */
  async function approveInChat(bearer: string) {
    const chatId = `chat-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const transport = new DefaultChatTransport({ api: `${ui.origin}/api/chat/travel-chat`, headers: { authorization: `Bearer ${bearer}` } });
    const messages: UIMessage[] = [{ id: `u-${chatId}`, role: 'user', parts: [{ type: 'text', text: 'book me a train' }] }];
    let held: UIMessage | undefined;
    for await (const snapshot of readUIMessageStream({
      stream: await transport.sendMessages({ chatId, messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined }),
    }))
      held = snapshot;
    const answered = {
      ...held!,
      parts: held!.parts.map((part) =>
        part.type === 'tool-book_train' && part.state === 'approval-requested'
          ? { ...part, state: 'approval-responded', approval: { id: part.approval.id, approved: true } }
          : part,
      ),
    } as UIMessage;
    const response = await fetch(`${ui.origin}/api/chat/travel-chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
      body: JSON.stringify({ id: chatId, messages: [...messages, answered] }),
    });
    return { runId: held!.id, response };
  }

  it('records the page’s verified user; one outside the rule is refused and nothing runs', async () => {
    const bob = await approveInChat(await token('bob', ['sales']));
    expect(bob.response.status).toBe(403);
    expect(await messageOf(bob.response)).toContain('bob (groups: sales) is not one of them');
    expect(trains(bob.runId)).toBe(0);

    const alice = await approveInChat(await token('alice', ['travel-admins']));
    expect(alice.response.status).toBe(200);
    await alice.response.text();
    await expect.poll(() => trains(alice.runId), { timeout: 15_000 }).toBe(1);
    expect((await worker.client.getHandle(alice.runId).status()).decisions).toEqual([expect.objectContaining({ decidedBy: 'alice', verified: true })]);
  });
});

describe('examples/auth/dev-issuer.ts, and a JWKS at a URL', () => {
  it('mints tokens keel serve takes, with the issuer’s keys served over HTTP', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-dev-issuer-'));
    const tokens = await devIssuerTokens(dir);
    const jwks = readFileSync(join(dir, 'jwks.json'), 'utf8');
    const issuerServer = createServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(jwks));
    await new Promise<void>((resolve) => issuerServer.listen(0, '127.0.0.1', resolve));
    const byUrl = await serve({
      issuer: 'https://issuer.keel.local',
      audience: 'keel',
      jwks: `http://127.0.0.1:${(issuerServer.address() as AddressInfo).port}/jwks.json`,
    });
    try {
      const runId = await heldTravel();
      const refused = await decide(runId, tokens.bob, { interruptId: 'i1', approved: true }, byUrl.origin);
      expect(refused.status).toBe(403);
      expect((await decide(runId, tokens.alice, { interruptId: 'i1', approved: true }, byUrl.origin)).status).toBe(200);
      await worker.client.getHandle(runId).result();
      expect(trains(runId)).toBe(1);
    } finally {
      await byUrl.close();
      issuerServer.close();
    }
  });
});
