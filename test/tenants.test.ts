/**
 * Many users on one keel serve (docs/tenants.md): with `auth:` on, a run belongs to whoever
 * started it (its owner, the verified subject) and their tenant (the token's `tenant` claim), and
 * the `access:` rules (default: the owner and the tenant's admins) decide who may read, steer,
 * abort, fork and decide it, on every surface. Tried the way it breaks: alice (tenant A) and bob
 * (tenant B), both verified and both in the agent's approver group, so only access stands between
 * bob and alice's runs; bob through the UI's API, its event stream, the inbox, a decision link
 * made for alice, the chat endpoint, MCP and A2A with their official clients, with a tenant in
 * the body, with a crafted filter, with alice's MCP session id, and racing her for a session.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client as A2AClient } from '@a2a-js/sdk/client';
import { Role, TaskState, type Message as A2AMessage, type Task } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../src/config/load';
import { PRINCIPAL_MEMO_KEY } from '../src/core/principal';
import { KEEL_OWNER, KEEL_TENANT } from '../src/core/search-attributes';
import { Registry } from '../src/registry';
import { inputFingerprint, signDecisionLink } from '../src/security/decision-links';
import { loadSigningKeys } from '../src/security/signing-keys';
import { startUiServer, type UiServer } from '../src/ui/server';
import { sessionWorkflowId } from '../src/core/session';
import * as agents from './fixtures/auth-agents';
import { startTestWorker, type TestWorker } from './support/harness';
import { devIssuerTokens } from './support/dev-issuer';
import { temporalCli } from './support/temporal-cli';

const ISSUER = 'https://idp.keel.test';
const testDir = mkdtempSync(join(tmpdir(), 'keel-tenants-'));
process.env.KEEL_TEST_DIR = testDir;
process.env.KEEL_SIGNING_KEY = 'tenants-test-signing-key-0123456789';

let worker: TestWorker;
let ui: UiServer;
let privateKey: CryptoKey;
const bearers: Record<string, string> = {};

/** A token of the test issuer for `subject` of `tenant`, in `groups`. */
const token = (subject: string, tenant: string, groups: string[]) =>
  new SignJWT({ groups, tenant })
    .setProtectedHeader({ alg: 'RS256', kid: 'test' })
    .setIssuer(ISSUER)
    .setAudience('keel')
    .setSubject(subject)
    .setIssuedAt()
    .setExpirationTime('30 minutes')
    .sign(privateKey);

const config = () =>
  parseConfig(
    {
      temporal: { address: inject('temporalAddress') },
      taskQueue: worker.taskQueue,
      server: { enabled: false },
      auth: { issuer: ISSUER, audience: 'keel', jwks: 'jwks.json' },
      modules: [join(__dirname, 'fixtures', 'auth-agents.ts')],
      serve: { agents: ['travel', 'travel-chat'] },
    },
    { baseDir: testDir, env: {} },
  );

beforeAll(async () => {
  const pair = await generateKeyPair('RS256');
  privateKey = pair.privateKey;
  writeFileSync(join(testDir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'test', alg: 'RS256', use: 'sig' }] }));
  worker = await startTestWorker(new Registry().addModuleExports(agents));
  ui = await startUiServer({ config: config(), port: 0, token: undefined });
  // Both may approve book_train (the agent's approver rule): only access keeps bob from alice's runs.
  bearers.alice = await token('alice', 'A', ['travel-admins']);
  bearers.bob = await token('bob', 'B', ['travel-admins']);
  bearers.ada = await token('ada', 'A', ['admins']);
}, 60_000);
afterAll(async () => {
  await ui?.close();
  await worker?.stop();
});

const api = (who: string, path: string, body?: unknown) =>
  fetch(`${ui.origin}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${bearers[who]!}`, ...(body === undefined ? {} : { 'content-type': 'application/json', 'x-keel-ui': '1' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
const errorOf = async (response: Response) => ((await response.json()) as { error: { status: string; message: string } }).error;
const linesOf = (file: string) => (existsSync(join(testDir, file)) ? readFileSync(join(testDir, file), 'utf8').trim().split('\n') : []);
const trains = (runId: string) => linesOf('trains.log').filter((line) => line.startsWith(`${runId} `)).length;
const listed = async (who: string, query = '') =>
  ((await (await api(who, `/api/runs${query}`)).json()) as { runs: Array<{ runId: string }> }).runs.map((run) => run.runId);

/** A run of travel alice starts from the page, waiting for approval of book_train. */
async function alicesHeldRun(): Promise<string> {
  const started = await api('alice', '/api/runs', { agent: 'travel', prompt: 'book me a train' });
  expect(started.status).toBe(200);
  const { runId } = (await started.json()) as { runId: string };
  await expect.poll(async () => (await worker.client.getHandle(runId).status()).interrupts.length, { timeout: 15_000 }).toBe(1);
  return runId;
}

/** What bob gets for a run id that exists nowhere: a refusal of alice's run must look exactly like it. */
async function notFoundLike(path: (runId: string) => string, body?: unknown) {
  const made = `ui-${randomUUID()}`;
  const response = await api('bob', path(made), body);
  const error = await errorOf(response);
  return { status: response.status, message: error.message.replaceAll(made, '<id>') };
}

describe('a run belongs to who started it', () => {
  it("records alice's verified subject and tenant in the memo and search attributes, never a tenant from the body", async () => {
    const runId = await alicesHeldRun();
    const description = await worker.client.getHandle(runId).describe();
    expect(description.memo?.[PRINCIPAL_MEMO_KEY]).toEqual({ tenant: 'A', owner: 'alice' });
    // Her verified tenant is the run's fair share on Temporal too (docs/tenants.md, "Fair shares").
    expect(description.priority).toMatchObject({ priorityKey: 3, fairnessKey: 'A' });
    await expect.poll(async () => (await worker.client.getHandle(runId).describe()).typedSearchAttributes.get(KEEL_TENANT), { timeout: 10_000 }).toBe('A');
    expect((await worker.client.getHandle(runId).describe()).typedSearchAttributes.get(KEEL_OWNER)).toBe('alice');
    // A body that names a tenant or owner is refused: who a run belongs to is not the caller's to say.
    const forged = await api('bob', '/api/runs', { agent: 'travel', prompt: 'x', tenant: 'A', owner: 'alice' });
    expect(forged.status).toBe(400);
    expect((await errorOf(forged)).message).toMatch(/unrecognized key/i);
    // keel list --tenant and the client's filter.
    expect((await worker.client.list({ tenant: 'A', owner: 'alice', limit: 100 })).map((run) => run.runId)).toContain(runId);
    expect((await worker.client.list({ tenant: 'B', limit: 100 })).map((run) => run.runId)).not.toContain(runId);
    await worker.client.getHandle(runId).cancel();
  });

  it('the tool acts for the run’s owner: its context says whom', async () => {
    const runId = await alicesHeldRun();
    expect((await api('alice', `/api/runs/${runId}/decisions`, { interruptId: 'i1', approved: true })).status).toBe(200);
    await worker.client.getHandle(runId).result();
    expect(linesOf('principals.log').filter((line) => line.startsWith(`${runId} `))).toEqual([`${runId} {"tenant":"A","owner":"alice"} null`]);
  });
  it('keeps whom it belongs to across continue-as-new: the next run of the chain has the same memo and search attributes', async () => {
    const handle = await worker.client.start('travel', 'book me a train', { tenant: 'A', owner: 'alice', continueAsNewAt: { historyEvents: 1 } });
    const first = (await handle.describe()).runId;
    await expect.poll(async () => (await handle.status()).interrupts.length, { timeout: 15_000 }).toBe(1);
    expect((await api('alice', `/api/runs/${handle.runId}/decisions`, { interruptId: 'i1', approved: true })).status).toBe(200);
    expect((await handle.result()).text).toBe('travel done');
    const last = await handle.describe();
    expect(last.runId, 'the run continued as new').not.toBe(first);
    expect(last.memo?.[PRINCIPAL_MEMO_KEY]).toEqual({ tenant: 'A', owner: 'alice' });
    expect(last.typedSearchAttributes.get(KEEL_TENANT)).toBe('A');
  });
});

describe("bob cannot reach alice's run through the UI's API", () => {
  it('does not list it, even with a filter crafted to escape the scope; alice and her tenant’s admin do', async () => {
    const runId = await alicesHeldRun();
    expect(await listed('alice')).toContain(runId);
    expect(await listed('ada'), 'a tenant admin (tenant:admins) reads the tenant’s runs').toContain(runId);
    expect(await listed('bob')).not.toContain(runId);
    for (const agent of ["travel' OR KeelTenant='A", "travel\\' OR KeelTenant = 'A' OR 'x'='x", "x') OR (KeelTenant='A", 'travel" OR KeelOwner="alice']) {
      const response = await api('bob', `/api/runs?agent=${encodeURIComponent(agent)}`);
      expect(response.status, agent).toBe(200);
      expect(
        ((await response.json()) as { runs: Array<{ runId: string }> }).runs.map((run) => run.runId),
        agent,
      ).not.toContain(runId);
    }
    const inbox = (await (await api('bob', '/api/inbox')).json()) as { holds: Array<{ runId: string }> };
    expect(inbox.holds.map((hold) => hold.runId)).not.toContain(runId);
    const own = (await (await api('alice', '/api/inbox')).json()) as { holds: Array<{ runId: string; principal?: unknown }> };
    expect(own.holds.find((hold) => hold.runId === runId)?.principal).toEqual({ tenant: 'A', owner: 'alice' });
    await worker.client.getHandle(runId).cancel();
  });

  it('reads, streams, steers, forks, aborts and decides nothing: each answers as for a run that does not exist', async () => {
    const runId = await alicesHeldRun();
    const reads: Array<[string, (id: string) => string, unknown?]> = [
      ['run view', (id) => `/api/runs/${id}`],
      ['holds', (id) => `/api/runs/${id}/holds`],
      ['events', (id) => `/api/runs/${id}/events`],
      ['decision', (id) => `/api/runs/${id}/decisions`, { interruptId: 'i1', approved: true }],
      ['steer', (id) => `/api/runs/${id}/steer`, { text: 'book it to Paris instead' }],
      ['fork', (id) => `/api/runs/${id}/fork`, { at: 0 }],
      ['abort', (id) => `/api/runs/${id}/abort`, {}],
    ];
    for (const [what, path, body] of reads) {
      const response = await api('bob', path(runId), body);
      const error = await errorOf(response);
      expect({ status: response.status, message: error.message.replaceAll(runId, '<id>') }, what).toEqual(await notFoundLike(path, body));
      expect(response.status, what).toBe(404);
    }
    // Nothing happened to her run: still held, not steered, nothing booked, no fork of it.
    const status = await worker.client.getHandle(runId).status();
    expect(status).toMatchObject({ state: 'waiting' });
    expect(status.steering ?? []).toEqual([]);
    expect(trains(runId)).toBe(0);
    // Alice herself reads and decides it.
    expect((await api('alice', `/api/runs/${runId}`)).status).toBe(200);
    expect((await api('alice', `/api/runs/${runId}/decisions`, { interruptId: 'i1', approved: true })).status).toBe(200);
    expect((await worker.client.getHandle(runId).result()).text).toBe('travel done');
    expect(trains(runId)).toBe(1);
  });

  it('a fork alice makes belongs to her; a decision link made for alice decides nothing for bob', async () => {
    const runId = await alicesHeldRun();
    const keys = loadSigningKeys(config());
    const hold = (await worker.client.getHandle(runId).pendingHolds())[0]!;
    const link = await signDecisionLink(keys, { runId, holdId: hold.id, action: 'approve', input: inputFingerprint(hold.input) }, 60_000);
    const page = await fetch(`${ui.origin}/decide/${link}`, { headers: { authorization: `Bearer ${bearers.bob!}` } });
    const confirm = await fetch(`${ui.origin}/decide/${link}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearers.bob!}`, origin: ui.origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    for (const response of [page, confirm]) {
      expect(response.status).toBe(410);
      expect(await response.text()).toContain(`run ${runId} no longer exists`);
    }
    expect(await worker.client.getHandle(runId).pendingHolds()).toHaveLength(1);
    expect(trains(runId)).toBe(0);
    const mine = await fetch(`${ui.origin}/decide/${link}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearers.alice!}`, origin: ui.origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    expect(mine.status).toBe(200);
    await worker.client.getHandle(runId).result();
    expect(trains(runId)).toBe(1);
    const fork = await api('alice', `/api/runs/${runId}/fork`, { at: 0 });
    expect(fork.status).toBe(200);
    const { runId: forkId } = (await fork.json()) as { runId: string };
    expect((await worker.client.getHandle(forkId).describe()).memo?.[PRINCIPAL_MEMO_KEY]).toEqual({ tenant: 'A', owner: 'alice' });
    expect(await listed('bob')).not.toContain(forkId);
    await worker.client
      .getHandle(forkId)
      .cancel()
      .catch(() => undefined);
  });
});

/** The AI SDK's chat request for one user message of chat `id`. */
const chatMessage = (id: string, text: string) => ({
  id,
  trigger: 'submit-message',
  messages: [{ id: randomUUID(), role: 'user', parts: [{ type: 'text', text }] }],
});
const chat = (who: string, path: string, body?: unknown) =>
  fetch(`${ui.origin}/api/chat/travel-chat${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${bearers[who]!}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

describe("bob cannot reach alice's chat", () => {
  it('reads no history, resumes no stream, sends no turn and decides no approval with her chat id', async () => {
    const chatId = `chat-${randomUUID()}`;
    const sent = await chat('alice', '', chatMessage(chatId, 'book me a train'));
    expect(sent.status).toBe(200);
    await sent.text();
    const session = worker.client.session('travel-chat', chatId);
    const { runId } = await session.snapshot();
    await expect.poll(async () => (await worker.client.getHandle(runId).status()).interrupts.length, { timeout: 15_000 }).toBe(1);
    expect((await worker.client.getHandle(runId).describe()).memo?.[PRINCIPAL_MEMO_KEY], 'a turn belongs to the session’s owner').toEqual({
      tenant: 'A',
      owner: 'alice',
    });
    expect((await session.snapshot()).sentBy).toEqual({ tenant: 'A', owner: 'alice' });

    const unknown = `chat-${randomUUID()}`;
    const missing = await errorOf(await chat('bob', `/${unknown}`));
    for (const path of [`/${chatId}`, `/${chatId}/stream`]) {
      const response = await chat('bob', path);
      expect(response.status, path).toBe(404);
      expect((await errorOf(response)).message.replaceAll(chatId, '<id>'), path).toBe(missing.message.replaceAll(unknown, '<id>'));
    }
    const turn = await chat('bob', '', chatMessage(chatId, 'and one for me'));
    expect(turn.status).toBe(404);
    const approval = await chat('bob', '', {
      id: chatId,
      trigger: 'submit-message',
      messages: [
        {
          id: runId,
          role: 'assistant',
          parts: [{ type: 'tool-book_train', toolCallId: 'i1', state: 'approval-responded', input: { to: 'Oslo' }, approval: { id: 'i1', approved: true } }],
        },
      ],
    });
    expect(approval.status).toBe(404);
    expect((await session.snapshot()).runId, 'no turn of bob’s was added').toBe(runId);
    expect(trains(runId)).toBe(0);
    expect((await chat('alice', `/${chatId}`)).status).toBe(200);
    await worker.client.getHandle(runId).cancel();
  });

  it('a turn checked against whom the session belonged is refused if another started it meanwhile (the workflow checks it too)', async () => {
    const sessionId = `race-${randomUUID()}`;
    await worker.client.session('travel-chat', sessionId, { tenant: 'A', owner: 'alice' }).send('book me a train', { detach: true });
    // Bob's check found no session, so his send says it must be his: alice's is there now, and the session refuses it.
    const bobs = worker.client.session('travel-chat', sessionId, { tenant: 'B', owner: 'bob' });
    await expect(bobs.send('mine now', { detach: true, ifBelongsTo: { tenant: 'B', owner: 'bob' } })).rejects.toMatchObject({
      status: 'NOT_FOUND',
      message: `session "${sessionId}" of agent "travel-chat" does not exist`,
    });
    const described = await worker.client.temporal.workflow.getHandle(sessionWorkflowId('travel-chat', sessionId)).describe();
    expect(described.memo?.[PRINCIPAL_MEMO_KEY]).toEqual({ tenant: 'A', owner: 'alice' });
    await worker.client.session('travel-chat', sessionId).abort();
  });
});

describe('the guarantees under a race, a forged update and a missing worker', () => {
  it('alice and bob racing to open one new chat id: one of them owns it, the other is refused and adds no turn', async () => {
    for (let round = 0; round < 4; round++) {
      const chatId = `contested-${randomUUID()}`;
      const [first, second] = await Promise.all([
        chat('alice', '', chatMessage(chatId, 'book me a train')),
        chat('bob', '', chatMessage(chatId, 'book me a train')),
      ]);
      await Promise.all([first.text(), second.text()]);
      const statuses = [first.status, second.status].sort();
      expect(statuses, `round ${round}`).toEqual([200, 404]);
      const winner = first.status === 200 ? { tenant: 'A', owner: 'alice' } : { tenant: 'B', owner: 'bob' };
      const session = worker.client.temporal.workflow.getHandle(sessionWorkflowId('travel-chat', chatId));
      expect((await session.describe()).memo?.[PRINCIPAL_MEMO_KEY], `round ${round}`).toEqual(winner);
      const latest = await worker.client.session('travel-chat', chatId).snapshot();
      expect(latest.sentBy, 'the one turn is the owner’s').toEqual(winner);
      expect(latest.runId.endsWith('/run-1'), 'the loser’s turn was never run').toBe(true);
      await worker.client.session('travel-chat', chatId).abort();
    }
  });

  it('a turn sent straight to Temporal (the temporal CLI) claiming the session is bob’s is refused by the session itself', async () => {
    const chatId = `forged-${randomUUID()}`;
    await worker.client.session('travel-chat', chatId, { tenant: 'A', owner: 'alice' }).send('book me a train', { detach: true });
    const forged = JSON.stringify({
      messages: [{ role: 'user', content: [{ text: 'mine now' }] }],
      detach: true,
      sentBy: { tenant: 'B', owner: 'bob' },
      ifBelongsTo: { tenant: 'B', owner: 'bob' },
    });
    const workflowId = sessionWorkflowId('travel-chat', chatId);
    const update = await temporalCli(['workflow', 'update', 'execute', '--workflow-id', workflowId, '--name', 'invoke', '--input', forged]);
    expect(update.code).not.toBe(0);
    // The CLI prints the refusal with its quotes escaped.
    expect(update.stderr.replaceAll('\\"', '"')).toContain(`session "${chatId}" of agent "travel-chat" does not exist (type: NOT_FOUND`);
    expect((await worker.client.session('travel-chat', chatId).snapshot()).runId.endsWith('/run-1')).toBe(true);
    await worker.client.session('travel-chat', chatId).abort();
  });

  it('with no worker polling the run’s task queue, the check still refuses bob and alice still lists her run (it reads the memo only)', async () => {
    const { runId } = await worker.client.start('travel', 'book me a train', { tenant: 'A', owner: 'alice', taskQueue: `nobody-polls-${randomUUID()}` });
    await expect.poll(() => listed('alice'), { timeout: 10_000 }).toContain(runId);
    expect(await listed('bob')).not.toContain(runId);
    for (const [path, body] of [
      [`/api/runs/${runId}/holds`, undefined],
      [`/api/runs/${runId}/abort`, {}],
      [`/api/runs/${runId}/steer`, { text: 'go to Paris' }],
    ] as const) {
      const response = await api('bob', path, body);
      expect(response.status, path).toBe(404);
      expect((await errorOf(response)).message, path).toBe(`no run "${runId}" exists`);
    }
    expect((await worker.client.getHandle(runId).describe()).status.name, 'bob’s abort did nothing').toBe('RUNNING');
    await worker.client.temporal.workflow.getHandle(runId).terminate('test over');
  });
});

/** An MCP client of the official SDK, as `who`. */
async function mcpAs(who: string): Promise<McpClient> {
  const client = new McpClient({ name: `keel-${who}`, version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${ui.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${bearers[who]!}` } } }),
  );
  return client;
}

describe("bob cannot reach alice's MCP tasks", () => {
  it('lists, gets, reads the result of and cancels none of them; her session id answers him nothing', async () => {
    const alice = await mcpAs('alice');
    const bob = await mcpAs('bob');
    try {
      const created = await alice.request(
        { method: 'tools/call', params: { name: 'travel', arguments: { prompt: 'book me a train' }, task: { ttl: 60_000 } } },
        CreateTaskResultSchema,
      );
      const taskId = created.task.taskId;
      expect((await worker.client.getHandle(taskId).describe()).memo?.[PRINCIPAL_MEMO_KEY]).toEqual({ tenant: 'A', owner: 'alice' });
      expect((await alice.experimental.tasks.listTasks()).tasks.map((task) => task.taskId)).toContain(taskId);
      expect((await bob.experimental.tasks.listTasks()).tasks.map((task) => task.taskId)).not.toContain(taskId);
      await expect(bob.experimental.tasks.getTask(taskId)).rejects.toThrow(/not found/i);
      await expect(bob.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).rejects.toThrow(/not found/i);
      await expect(bob.experimental.tasks.cancelTask(taskId)).rejects.toThrow(/not found/i);
      expect((await worker.client.getHandle(taskId).status()).state).not.toBe('cancelled');
      // Alice's MCP session id, sent with bob's token, finds no session.
      const sessionId = (alice.transport as StreamableHTTPClientTransport).sessionId!;
      const hijack = await fetch(`${ui.origin}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${bearers.bob!}`,
          'mcp-session-id': sessionId,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { taskId } }),
      });
      expect(hijack.status).toBe(404);
      // An owner in the arguments is no one's to say: refused as an unknown argument, or the run is still the caller's.
      const forged = await bob.callTool({ name: 'travel', arguments: { prompt: 'x', tenant: 'A', owner: 'alice' } }).catch((error: Error) => error);
      expect(forged instanceof Error ? forged.message : JSON.stringify(forged)).toMatch(/tenant|owner|unrecognized/i);
      await worker.client.getHandle(taskId).cancel();
    } finally {
      await Promise.all([alice.close(), bob.close()]);
    }
  });
});

/** An A2A client of the official SDK for `agent`, as `who`. */
async function a2aAs(who: string, agent: string): Promise<A2AClient> {
  const fetchImpl: typeof fetch = (input, init) =>
    fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers).entries()), authorization: `Bearer ${bearers[who]!}` } });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      // The SDK's options class is not exported: its one field, given as a plain object.
      // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromUrl(`${ui.origin}/a2a/${agent}/`);
}
const a2aMessage = (text: string, { contextId = '', taskId = '' } = {}): A2AMessage => ({
  messageId: randomUUID(),
  contextId,
  taskId,
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }] as A2AMessage['parts'],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const a2aSend = (client: A2AClient, message: A2AMessage, tenant = '') =>
  client.sendMessage({
    tenant,
    message,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
    metadata: undefined,
  }) as Promise<Task>;

/** The ids of the tasks an A2A client lists (with A2A's own `tenant` field set as given). */
const a2aTaskIds = async (client: A2AClient, tenant = '') =>
  (
    await client.listTasks({
      tenant,
      contextId: '',
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageSize: 100,
      pageToken: '',
      historyLength: undefined,
      statusTimestampAfter: undefined,
      includeArtifacts: false,
    })
  ).tasks.map((listed) => listed.id);

describe("bob cannot reach alice's A2A tasks", () => {
  it('gets, lists, follows, cancels and answers none of them, and sends nothing into her context', async () => {
    const alice = await a2aAs('alice', 'travel');
    const bob = await a2aAs('bob', 'travel');
    // Alice names tenant B in the request: A2A's own field is not who asks.
    const task = await a2aSend(alice, a2aMessage('book me a train'), 'B');
    expect((await worker.client.getHandle(task.id).describe()).memo?.[PRINCIPAL_MEMO_KEY]).toEqual({ tenant: 'A', owner: 'alice' });
    await expect.poll(async () => (await worker.client.getHandle(task.id).status()).interrupts.length, { timeout: 15_000 }).toBe(1);
    await expect(bob.getTask({ tenant: '', id: task.id, historyLength: undefined })).rejects.toThrow(/no task/);
    await expect(bob.cancelTask({ tenant: '', id: task.id, metadata: undefined })).rejects.toThrow(/no task/);
    await expect(
      (async () => {
        for await (const _event of bob.resubscribeTask({ tenant: '', id: task.id })) return;
      })(),
    ).rejects.toThrow(/no task/);
    const answer = a2aMessage('yes', { taskId: task.id });
    answer.parts.push({
      content: { $case: 'data', value: { approved: true } },
      metadata: undefined,
      filename: '',
      mediaType: '',
    });
    await expect(a2aSend(bob, answer)).rejects.toThrow(/no task/);
    // bob names alice's tenant in A2A's own field: his list is still his.
    expect(await a2aTaskIds(bob, 'A')).not.toContain(task.id);
    expect(await a2aTaskIds(alice)).toContain(task.id);
    expect((await worker.client.getHandle(task.id).status()).state).toBe('waiting');
    expect(trains(task.id)).toBe(0);
    // A message into alice's chat context (a session agent) is refused as a context that does not exist.
    const aliceChat = await a2aAs('alice', 'travel-chat');
    const chatTask = await a2aSend(aliceChat, a2aMessage('book me a train'));
    await expect(a2aSend(await a2aAs('bob', 'travel-chat'), a2aMessage('and me', { contextId: chatTask.contextId }))).rejects.toThrow(/does not exist/);
    await worker.client.getHandle(task.id).cancel();
    await worker.client.session('travel-chat', chatTask.contextId).abort();
  });
});

describe('docs/tenants.md, with examples/auth/dev-issuer.ts', () => {
  it("alice's run is listed for alice and not for bob, with the example issuer's tokens", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-tenants-issuer-'));
    const tokens = await devIssuerTokens(dir);
    const served = await startUiServer({
      config: parseConfig(
        {
          temporal: { address: inject('temporalAddress') },
          taskQueue: worker.taskQueue,
          server: { enabled: false },
          auth: { issuer: 'https://issuer.keel.local', audience: 'keel', jwks: join(dir, 'jwks.json') },
          modules: [join(__dirname, 'fixtures', 'auth-agents.ts')],
        },
        { baseDir: dir, env: {} },
      ),
      port: 0,
      token: undefined,
    });
    try {
      const as = (who: string, path: string, body?: unknown) =>
        fetch(`${served.origin}${path}`, {
          method: body === undefined ? 'GET' : 'POST',
          headers: { authorization: `Bearer ${tokens[who]!}`, ...(body === undefined ? {} : { 'content-type': 'application/json', 'x-keel-ui': '1' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
      const { runId } = (await (await as('alice', '/api/runs', { agent: 'travel', prompt: 'book me a train' })).json()) as { runId: string };
      const runsOf = async (who: string) => ((await (await as(who, '/api/runs')).json()) as { runs: Array<{ runId: string; tenant?: string }> }).runs;
      expect((await runsOf('alice')).find((run) => run.runId === runId)).toMatchObject({ tenant: 'acme', owner: 'alice' });
      expect((await runsOf('bob')).map((run) => run.runId)).not.toContain(runId);
      expect((await as('bob', `/api/runs/${runId}`)).status).toBe(404);
      await worker.client.getHandle(runId).cancel();
    } finally {
      await served.close();
    }
  });
});
