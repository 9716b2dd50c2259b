/**
 * keel's agents as A2A agents (docs/a2a.md), reached with the official A2A JavaScript SDK's
 * client (and a v0.3 request as an older client sends it): an agent card per exposed agent; a
 * message runs the agent and its task is the run; streaming gives its steps; a hold is
 * `input-required` and a data part decides it; a context is a session; a task outlives the keel
 * server; cancelling a task aborts its run; bad input is refused, saying what was wrong.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Role, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../src/config/load';
import { Registry } from '../src/registry';
import { startUiServer, type UiServer } from '../src/ui/server';
import * as agents from './fixtures/mcp-agents';
import { startTestWorker, type TestWorker } from './support/harness';
import { ROOT, spawnCommand } from './support/processes';

const EXPOSED = ['mcp-helper', 'mcp-structured', 'mcp-held', 'mcp-slow', 'mcp-chat'];
const testDir = mkdtempSync(join(tmpdir(), 'keel-a2a-server-'));
process.env.KEEL_TEST_DIR = testDir;

/** How many times mcp_charge ran in run `runId`. */
const chargesOf = (runId: string) =>
  existsSync(join(testDir, 'charged.log'))
    ? readFileSync(join(testDir, 'charged.log'), 'utf8')
        .split('\n')
        .filter((line) => line.startsWith(`${runId} `)).length
    : 0;

let worker: TestWorker;
let ui: UiServer;

const configFor = (taskQueue: string) =>
  parseConfig(
    {
      temporal: { address: inject('temporalAddress') },
      taskQueue,
      server: { enabled: false },
      modules: ['test/fixtures/mcp-agents.ts'],
      serve: { agents: EXPOSED },
    },
    { baseDir: ROOT, env: {} },
  );

beforeAll(async () => {
  worker = await startTestWorker(new Registry().addModuleExports(agents));
  ui = await startUiServer({ config: configFor(worker.taskQueue), port: 0, token: undefined });
});
afterAll(async () => {
  await ui?.close();
  await worker?.stop();
});

const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const data = (value: unknown): Part => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });

/** A user's message, optionally for a context or a task. */
const userMessage = (parts: Part[], { contextId = '', taskId = '' } = {}): Message => ({
  messageId: randomUUID(),
  contextId,
  taskId,
  role: Role.ROLE_USER,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

const send = (client: Client, message: Message, returnImmediately = false) =>
  client.sendMessage({
    tenant: '',
    message,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: undefined,
  }) as Promise<Task>;

// The card is relative to the agent's address: its base URL ends with a slash.
const agentClient = (agent: string, origin = ui.origin) => new ClientFactory().createFromUrl(`${origin}/a2a/${agent}/`);
const textsOf = (parts: readonly Part[] | undefined) => (parts ?? []).flatMap((part) => (part.content?.$case === 'text' ? [part.content.value] : []));
const dataOf = (parts: readonly Part[] | undefined) =>
  (parts ?? []).find((part) => part.content?.$case === 'data')?.content?.value as Record<string, unknown> | undefined;

describe('keel agents over A2A', () => {
  it('publishes an agent card for each exposed agent, and none for another', async () => {
    const card = (await (await fetch(`${ui.origin}/a2a/mcp-helper/.well-known/agent-card.json`)).json()) as Record<string, unknown>;
    expect(card).toMatchObject({
      name: 'mcp-helper',
      description: 'Answers questions, looking facts up.',
      supportedInterfaces: [{ url: `${ui.origin}/a2a/mcp-helper`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      capabilities: { streaming: true },
      skills: [{ id: 'mcp-helper', name: 'mcp-helper' }],
    });
    expect((await fetch(`${ui.origin}/a2a/mcp-hidden/.well-known/agent-card.json`)).status).toBe(404);
  });

  it('runs the agent for a message: the task is the run, its answer an artifact', async () => {
    const client = await agentClient('mcp-helper');
    const task = await send(client, userMessage([text('what is it?')]));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textsOf(task.artifacts[0]?.parts)).toEqual(['the answer: life: 42']);
    expect((await worker.client.getHandle(task.id).status()).state).toBe('completed');
    const structured = await send(await agentClient('mcp-structured'), userMessage([text('plan it')]));
    expect(dataOf(structured.artifacts[0]?.parts)).toEqual({ city: 'Oslo', days: 3 });
  });

  it('streams a run’s steps as task updates, ending with its answer', async () => {
    const client = await agentClient('mcp-helper');
    const kinds: string[] = [];
    const said: string[] = [];
    for await (const event of client.sendMessageStream({
      tenant: '',
      message: userMessage([text('what is it?')]),
      configuration: undefined,
      metadata: undefined,
    })) {
      const payload = event.payload;
      if (!payload) continue;
      kinds.push(payload.$case);
      if (payload.$case === 'statusUpdate') said.push(...textsOf(payload.value.status?.message?.parts));
      if (payload.$case === 'artifactUpdate') said.push(...textsOf(payload.value.artifact?.parts));
    }
    expect(kinds[0]).toBe('task');
    expect(kinds.at(-1)).toBe('statusUpdate');
    expect(said).toContain('calling mcp_lookup');
    expect(said).toContain('the answer: life: 42');
  });

  it('asks for input when the run holds a call, and a data part with the decision lets it go on', async () => {
    const client = await agentClient('mcp-held');
    const waiting = await send(client, userMessage([text('charge it')]));
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(textsOf(waiting.status?.message?.parts)[0]).toMatch(/mcp_charge|approve/i);
    expect(dataOf(waiting.status?.message?.parts)).toMatchObject({ interruptId: expect.any(String), toolName: 'mcp_charge', input: { cents: 700 } });
    // A malformed decision says what was wrong and changes nothing.
    await expect(send(client, userMessage([data({ approved: 'yes' })], { taskId: waiting.id, contextId: waiting.contextId }))).rejects.toThrow(/approved/);
    await expect(send(client, userMessage([text('yes please')], { taskId: waiting.id }))).rejects.toThrow(/waits for a decision: send a data part/);
    expect((await worker.client.getHandle(waiting.id).status()).state).toBe('waiting');
    const done = await send(client, userMessage([data({ approved: true, reason: 'ok' })], { taskId: waiting.id, contextId: waiting.contextId }));
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textsOf(done.artifacts[0]?.parts)).toEqual(['the answer: charged 700']);
    const status = await worker.client.getHandle(waiting.id).status();
    expect(status.decisions).toEqual([expect.objectContaining({ decision: 'approved', decidedBy: 'a2a:client', reason: 'ok' })]);
    expect(chargesOf(waiting.id), 'the approved call runs once').toBe(1);
  });

  it('denies the held call with a data part that says so, and the call never runs; a decision meant elsewhere is refused', async () => {
    const client = await agentClient('mcp-held');
    const waiting = await send(client, userMessage([text('charge it')]));
    // A hold this task does not have, and a task of another agent: refused, nothing decided.
    await expect(send(client, userMessage([data({ approved: true, interruptId: 'i9' })], { taskId: waiting.id }))).rejects.toThrow(/unknown hold id "i9"/);
    const other = await send(await agentClient('mcp-helper'), userMessage([text('what is it?')]));
    await expect(send(client, userMessage([data({ approved: true })], { taskId: other.id }))).rejects.toThrow(/no task .* of agent mcp-held/);
    expect((await worker.client.getHandle(waiting.id).status()).state).toBe('waiting');
    const denied = await send(client, userMessage([data({ approved: false, reason: 'no' })], { taskId: waiting.id }));
    expect(denied.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(chargesOf(waiting.id), 'a denied call never runs').toBe(0);
  });

  it('takes one of two decisions sent at once for the same hold, and the held call runs once', async () => {
    const [first, second] = await Promise.all([agentClient('mcp-held'), agentClient('mcp-held')]);
    const waiting = await send(first, userMessage([text('charge it')]));
    const outcomes = await Promise.allSettled([
      send(first, userMessage([data({ approved: true })], { taskId: waiting.id })),
      send(second, userMessage([data({ approved: false, reason: 'racing' })], { taskId: waiting.id })),
    ]);
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    const refused = outcomes.find((outcome) => outcome.status === 'rejected');
    // Refused however the race fell: the hold already decided, or the run the first decision let finish already ended.
    expect(String(refused?.reason)).toMatch(/already decided|not waiting|no hold waiting|has ended \(\w+\); it takes no more decisions/);
    const status = await worker.client.getHandle(waiting.id).status();
    expect(status.decisions).toHaveLength(1);
    expect(chargesOf(waiting.id)).toBe(status.decisions![0]!.decision === 'approved' ? 1 : 0);
  });

  it('keeps a context as a session, and refuses a context for an agent that keeps none', async () => {
    const chat = await agentClient('mcp-chat');
    const contextId = `a2a-${randomUUID()}`;
    await send(chat, userMessage([text('hello')], { contextId }));
    const second = await send(chat, userMessage([text('again')], { contextId }));
    expect(second.contextId).toBe(contextId);
    expect(textsOf(second.artifacts[0]?.parts)).toEqual(['message 2 of this session']);
    const helper = await agentClient('mcp-helper');
    await expect(send(helper, userMessage([text('hi')], { contextId }))).rejects.toThrow(/keeps no conversation between tasks/);
  });

  it('answers for a task after the keel server that started it is gone, and cancelling the task aborts its run', async () => {
    const started = await send(await agentClient('mcp-slow'), userMessage([text('take your time')]), true);
    expect(started.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    const second = await startUiServer({ config: configFor(worker.taskQueue), port: 0, token: undefined });
    try {
      const client = await agentClient('mcp-slow', second.origin);
      expect((await client.getTask({ tenant: '', id: started.id, historyLength: undefined })).status?.state).toBe(TaskState.TASK_STATE_WORKING);
      const cancelled = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
      expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      await expect.poll(async () => (await worker.client.getHandle(started.id).status()).state, { timeout: 15_000 }).toBe('cancelled');
      await expect(client.getTask({ tenant: '', id: 'no-such-run', historyLength: undefined })).rejects.toThrow(/no task no-such-run/);
    } finally {
      await second.close();
    }
  });

  it('answers the example client of docs/a2a.md, which approves a hold on its terminal', async () => {
    const example = spawnCommand(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'examples', 'a2a', 'ask-agent.ts'), `${ui.origin}/a2a/mcp-held/`, 'charge', 'it'],
      {
        stdin: 'pipe',
      },
    );
    await example.waitFor(/\[y\/N\] $/);
    example.child.stdin!.end('y\n');
    expect(await example.exited).toBe(0);
    expect(example.stdout()).toBe('the answer: charged 700\n');
    expect(example.stderr()).toContain('… calling mcp_charge');
  });

  it('answers a v0.3 client’s message/send', async () => {
    const response = await fetch(`${ui.origin}/a2a/mcp-helper`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'what is it?' }] } },
      }),
    });
    const answer = (await response.json()) as {
      id: number;
      result: { kind: string; status: { state: string }; artifacts: Array<{ parts: Array<{ text?: string }> }> };
    };
    expect(answer.id).toBe(7);
    expect(answer.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    expect(answer.result.artifacts[0]?.parts[0]?.text).toBe('the answer: life: 42');
  });

  it('streams to a v0.3 client’s message/stream, and answers its tasks/get', async () => {
    const response = await fetch(`${ui.origin}/a2a/mcp-helper`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 8,
        method: 'message/stream',
        params: { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'what is it?' }] } },
      }),
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const events = (await response.text())
      .split('\n\n')
      .filter((chunk) => chunk.startsWith('data: '))
      .map(
        (chunk) => (JSON.parse(chunk.slice('data: '.length)) as { result: { kind: string; id?: string; taskId?: string; status?: { state: string } } }).result,
      );
    expect(events[0]?.kind).toBe('task');
    expect(events.at(-1)).toMatchObject({ kind: 'status-update', status: { state: 'completed' } });
    const taskId = events[0]!.id!;
    const got = await fetch(`${ui.origin}/a2a/mcp-helper`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tasks/get', params: { id: taskId } }),
    });
    expect(((await got.json()) as { result: { id: string; status: { state: string } } }).result).toMatchObject({ id: taskId, status: { state: 'completed' } });
  });

  it('answers bad requests with the protocol’s own errors, saying what was wrong', async () => {
    const rpc = (path: string, body: string, headers: Record<string, string> = {}) =>
      fetch(`${ui.origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...headers }, body });
    const hidden = await rpc('/a2a/mcp-hidden', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: {} }));
    expect(hidden.status).toBe(404);
    expect(await hidden.json()).toMatchObject({ error: { message: 'no A2A agent "mcp-hidden" here' } });
    const malformed = await rpc('/a2a/mcp-helper', '{"jsonrpc": "2.0", ');
    expect(await malformed.json()).toMatchObject({ error: { code: -32700, message: expect.stringContaining('not JSON') } });
    const token = 'a-long-random-token-for-a2a';
    const guarded = await startUiServer({ config: configFor(worker.taskQueue), port: 0, token });
    try {
      const card = await fetch(`${guarded.origin}/a2a/mcp-helper/.well-known/agent-card.json`);
      expect(card.status).toBe(401);
      const withToken = await fetch(`${guarded.origin}/a2a/mcp-helper/.well-known/agent-card.json`, { headers: { authorization: `Bearer ${token}` } });
      expect(withToken.status).toBe(200);
    } finally {
      await guarded.close();
    }
  });

  it('refuses a message from a page of another origin before it reads the body', async () => {
    const response = await fetch(`${ui.origin}/a2a/mcp-helper`, {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: {} }),
    });
    expect(response.status).toBe(403);
  });
});
