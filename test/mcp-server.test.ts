/**
 * keel's agents as MCP tools (docs/mcp.md), reached with the official MCP TypeScript SDK's client
 * over Streamable HTTP (`/mcp` of `keel ui`) and over stdio (`keel mcp`): only the agents
 * `serve.agents` names are listed; a call runs the agent and answers (structured content from an
 * output schema), with progress; a session agent continues its session; a hold is asked about by
 * elicitation, or answered "waiting" to a client that cannot be asked; a cancelled call aborts
 * its run; bad arguments and a page of another origin are refused.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../src/config/load';
import { Registry } from '../src/registry';
import { startUiServer, type UiServer } from '../src/ui/server';
import * as agents from './fixtures/mcp-agents';
import { startTestWorker, type TestWorker } from './support/harness';
import { BIN, ROOT, commandEnv, killAfterEach, runKeel, spawnCommand, spawnKeel, writeTestConfig, CRASH_AGENT_CONFIG } from './support/processes';

const EXPOSED = ['mcp-helper', 'mcp-structured', 'mcp-held', 'mcp-held-plan', 'mcp-slow', 'mcp-chat'];
const testDir = mkdtempSync(join(tmpdir(), 'keel-mcp-server-'));
process.env.KEEL_TEST_DIR = testDir;

let worker: TestWorker;
let ui: UiServer;
const clients: Client[] = [];

const configFor = (serve: { agents: string[] }) =>
  parseConfig(
    {
      temporal: { address: inject('temporalAddress') },
      taskQueue: worker.taskQueue,
      server: { enabled: false },
      modules: ['test/fixtures/mcp-agents.ts'],
      serve,
    },
    { baseDir: ROOT, env: {} },
  );

beforeAll(async () => {
  worker = await startTestWorker(new Registry().addModuleExports(agents));
  ui = await startUiServer({ config: configFor({ agents: EXPOSED }), port: 0, token: undefined });
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await ui?.close();
  await worker?.stop();
});

/** An MCP client connected to keel ui's /mcp (with elicitation when `elicit` answers). */
async function httpClient(elicit?: (message: string) => { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> }): Promise<Client> {
  const client = new Client({ name: 'keel-test', version: '1.0.0' }, { capabilities: elicit ? { elicitation: { form: {} } } : {} });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, (request) => elicit(request.params.message));
  await client.connect(new StreamableHTTPClientTransport(new URL(`${ui.origin}/mcp`)));
  clients.push(client);
  return client;
}

const track = killAfterEach(afterEach);
const linesOf = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

/** An MCP client of `keel mcp` over stdio, for `configPath`. */
async function stdioClient(configPath: string): Promise<Client> {
  const client = new Client({ name: 'keel-stdio-test', version: '1.0.0' });
  const env = Object.fromEntries(Object.entries(commandEnv()).filter((entry): entry is [string, string] => entry[1] !== undefined));
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp', '--config', configPath], env, stderr: 'pipe' }));
  clients.push(client);
  return client;
}

/** How many times mcp_charge ran in run `runId`. */
const chargesOf = (runId: string) => linesOf(join(testDir, 'charged.log')).filter((line) => line.startsWith(`${runId} `)).length;

const textOf = (result: CallToolResult) => result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
const runIdOf = (result: CallToolResult) => (result._meta as Record<string, string>)['keel/runId']!;

describe('keel agents as MCP tools', () => {
  it('lists only the agents serve.agents names, each with its input and output schema', async () => {
    const client = await httpClient();
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([...EXPOSED].sort());
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get('mcp-helper')).toMatchObject({ description: 'Answers questions, looking facts up.', inputSchema: { required: ['prompt'] } });
    expect(byName.get('mcp-chat')?.inputSchema.required).toEqual(['prompt', 'sessionId']);
    expect(byName.get('mcp-structured')?.outputSchema).toMatchObject({ type: 'object', properties: { city: { type: 'string' } } });
  });

  it('runs the agent for a call and answers with its text, saying its progress on the way', async () => {
    const client = await httpClient();
    const progress: string[] = [];
    const result = (await client.callTool({ name: 'mcp-helper', arguments: { prompt: 'what is it?' } }, undefined, {
      onprogress: ({ message }) => progress.push(message ?? ''),
    })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe('the answer: life: 42');
    expect(progress).toContain('calling mcp_lookup');
    const status = await worker.client.getHandle(runIdOf(result)).status();
    expect(status.state).toBe('completed');
  });

  it('gives an agent’s structured answer as structured content', async () => {
    const client = await httpClient();
    const result = (await client.callTool({ name: 'mcp-structured', arguments: { prompt: 'plan it' } })) as CallToolResult;
    expect(result.structuredContent).toEqual({ city: 'Oslo', days: 3 });
  });

  it('continues a session agent’s conversation by its session id', async () => {
    const client = await httpClient();
    const sessionId = `mcp-${Date.now()}`;
    await client.callTool({ name: 'mcp-chat', arguments: { prompt: 'hello', sessionId } });
    const second = (await client.callTool({ name: 'mcp-chat', arguments: { prompt: 'again', sessionId } })) as CallToolResult;
    expect(textOf(second)).toBe('message 2 of this session');
  });

  it('refuses bad arguments at once, naming what was wrong', async () => {
    const client = await httpClient();
    const started = Date.now();
    await expect(client.callTool({ name: 'mcp-helper', arguments: { prompt: 'x', extra: 1 } })).rejects.toThrow(/arguments of mcp-helper: .*extra/);
    await expect(client.callTool({ name: 'mcp-chat', arguments: { prompt: 'x' } })).rejects.toThrow(/sessionId is required/);
    await expect(client.callTool({ name: 'mcp-hidden', arguments: { prompt: 'x' } })).rejects.toThrow(/no tool "mcp-hidden"/);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('asks a client that can be asked to decide a hold, and records its decision with the client’s name', async () => {
    const asked: string[] = [];
    const client = await httpClient((message) => {
      asked.push(message);
      return { action: 'accept', content: { approved: true, reason: 'fine' } };
    });
    const result = (await client.callTool({ name: 'mcp-held', arguments: { prompt: 'charge it' } })) as CallToolResult;
    expect(textOf(result)).toBe('the answer: charged 700');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('mcp_charge');
    const status = await worker.client.getHandle(runIdOf(result)).status();
    expect(status.decisions).toEqual([expect.objectContaining({ decision: 'approved', decidedBy: 'mcp:keel-test', reason: 'fine', toolName: 'mcp_charge' })]);
    expect(chargesOf(runIdOf(result)), 'the approved call runs once').toBe(1);
  });

  it('denies the held call when the client declines, and the call never runs', async () => {
    const client = await httpClient(() => ({ action: 'decline' }));
    const result = (await client.callTool({ name: 'mcp-held', arguments: { prompt: 'charge it' } })) as CallToolResult;
    const status = await worker.client.getHandle(runIdOf(result)).status();
    expect(status.decisions).toEqual([expect.objectContaining({ decision: 'denied', decidedBy: 'mcp:keel-test' })]);
    expect(chargesOf(runIdOf(result))).toBe(0);
  });

  it('tells a client that cannot be asked that the run waits, and how to decide it; nothing runs before the decision', async () => {
    const client = await httpClient();
    const result = (await client.callTool({ name: 'mcp-held', arguments: { prompt: 'charge it' } })) as CallToolResult;
    const runId = runIdOf(result);
    expect(textOf(result)).toMatch(new RegExp(`run ${runId} waits for a decision: .*keel approve ${runId} `));
    const waiting = (result.structuredContent as { waiting: { interruptId: string } }).waiting;
    const handle = worker.client.getHandle(runId);
    expect((await handle.status()).state).toBe('waiting');
    await handle.deny(waiting.interruptId, { reason: 'not today' });
    await handle.result();
    expect(chargesOf(runId)).toBe(0);
  });

  it('answers "waiting" as a tool error for an agent with an output schema, so the answer never breaks its schema', async () => {
    const client = await httpClient();
    const result = (await client.callTool({ name: 'mcp-held-plan', arguments: { prompt: 'plan and pay' } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    const waiting = (result._meta as Record<string, { interruptId: string; toolName: string }>)['keel/waiting']!;
    expect(waiting.toolName).toBe('mcp_charge');
    const handle = worker.client.getHandle(runIdOf(result));
    await handle.deny(waiting.interruptId);
    await handle.result().catch(() => undefined);
  });

  it('aborts the run when the client cancels its call', async () => {
    const client = await httpClient();
    const controller = new AbortController();
    const call = client.callTool({ name: 'mcp-slow', arguments: { prompt: 'take your time' } }, undefined, { signal: controller.signal });
    // The run is started once it is listed; then the call is cancelled.
    let runId: string | undefined;
    for (let tries = 0; !runId && tries < 100; tries++) {
      runId = (await worker.client.list({ agent: 'mcp-slow', state: 'running' }).catch(() => [])).find((run) => run.runId.startsWith('mcp-'))?.runId;
      if (!runId) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(runId).toBeDefined();
    controller.abort();
    await expect(call).rejects.toThrow();
    const handle = worker.client.getHandle(runId!);
    await expect.poll(async () => (await handle.status()).state, { timeout: 15_000 }).toBe('cancelled');
  });

  it('answers a call made as a task at once, with the run as the task, and its result when it ends', async () => {
    const client = await httpClient();
    const messages: Array<{ type: string; taskId?: string; status?: string; text?: string }> = [];
    for await (const message of client.experimental.tasks.callToolStream({ name: 'mcp-helper', arguments: { prompt: 'what is it?' } }, CallToolResultSchema, {
      task: { ttl: 60_000 },
    })) {
      if (message.type === 'taskCreated' || message.type === 'taskStatus')
        messages.push({ type: message.type, taskId: message.task.taskId, status: message.task.status });
      else if (message.type === 'result') messages.push({ type: 'result', text: textOf(message.result) });
      else messages.push({ type: message.type, text: String(message.error) });
    }
    const taskId = messages[0]?.taskId;
    expect(messages[0]).toMatchObject({ type: 'taskCreated', status: 'working' });
    expect(taskId).toMatch(/^mcp-/);
    expect(messages.at(-1)).toEqual({ type: 'result', text: 'the answer: life: 42' });
    expect((await worker.client.getHandle(taskId!).status()).state).toBe('completed');
    expect((await client.experimental.tasks.listTasks()).tasks.map((task) => task.taskId)).toContain(taskId);
  });

  it('keeps a task that waits for a decision through a restart of the keel server: another server asks, and the run goes on', async () => {
    const first = await httpClient();
    const created = await first.request(
      { method: 'tools/call', params: { name: 'mcp-held', arguments: { prompt: 'charge it' }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const taskId = created.task.taskId;
    await expect.poll(async () => (await first.experimental.tasks.getTask(taskId)).status, { timeout: 15_000 }).toBe('input_required');
    await first.close();
    // The keel server that created the task goes; a new one on another port answers for it.
    const second = await startUiServer({ config: configFor({ agents: EXPOSED }), port: 0, token: undefined });
    try {
      const asked: string[] = [];
      const client = new Client({ name: 'keel-test-later', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(request.params.message);
        return { action: 'accept', content: { approved: true } };
      });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${second.origin}/mcp`)));
      clients.push(client);
      const task = await client.experimental.tasks.getTask(taskId);
      expect(task).toMatchObject({ status: 'input_required', statusMessage: expect.stringContaining('mcp_charge') });
      const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
      expect(textOf(result)).toBe('the answer: charged 700');
      expect(asked).toHaveLength(1);
      const status = await worker.client.getHandle(taskId).status();
      expect(status.decisions).toEqual([expect.objectContaining({ decision: 'approved', decidedBy: 'mcp:keel-test-later' })]);
      expect(chargesOf(taskId), 'the approved call runs once').toBe(1);
    } finally {
      await second.close();
    }
  });

  it('aborts the run when its task is cancelled, and shows no task for a run of an agent it does not expose', async () => {
    const client = await httpClient();
    const created = await client.request(
      { method: 'tools/call', params: { name: 'mcp-slow', arguments: { prompt: 'take your time' }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const cancelled = await client.experimental.tasks.cancelTask(created.task.taskId);
    expect(cancelled.status).toBe('cancelled');
    await expect.poll(async () => (await worker.client.getHandle(created.task.taskId).status()).state, { timeout: 15_000 }).toBe('cancelled');
    const hidden = await worker.client.start('mcp-hidden', 'hello');
    await expect(client.experimental.tasks.getTask(hidden.runId)).rejects.toThrow(/not found/i);
  });

  it('refuses a call from a page of another origin before it reads the body', async () => {
    const response = await fetch(`${ui.origin}/mcp`, {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
    });
    expect(response.status).toBe(403);
  });

  it('with a token, takes only calls that carry it', async () => {
    const token = 'a-long-random-token-for-mcp';
    const guarded = await startUiServer({ config: configFor({ agents: ['mcp-helper'] }), port: 0, token });
    try {
      const refused = new Client({ name: 'no-token', version: '1.0.0' });
      await expect(refused.connect(new StreamableHTTPClientTransport(new URL(`${guarded.origin}/mcp`)))).rejects.toThrow(/401|needs its token/);
      const client = new Client({ name: 'with-token', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${guarded.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
      );
      clients.push(client);
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['mcp-helper']);
    } finally {
      await guarded.close();
    }
  });

  it('exposes every agent for keel dev on loopback, none off loopback, and goes on without /mcp when a module fails', async () => {
    const all = await startUiServer({ config: configFor({ agents: [] }), port: 0, exposeAll: true });
    await all.close();
    expect(all.mcpAgents).toEqual(['mcp-chat', 'mcp-held', 'mcp-held-plan', 'mcp-helper', 'mcp-hidden', 'mcp-slow', 'mcp-structured']);
    const exposed = await startUiServer({ config: configFor({ agents: [] }), host: '0.0.0.0', port: 0, token: 'a-long-random-token-for-mcp', exposeAll: true });
    await exposed.close();
    expect(exposed.mcpAgents).toEqual([]);
    const broken = parseConfig(
      {
        temporal: { address: inject('temporalAddress') },
        taskQueue: worker.taskQueue,
        server: { enabled: false },
        modules: ['test/fixtures/no-such-module.ts'],
      },
      { baseDir: ROOT, env: {} },
    );
    const without = await startUiServer({ config: broken, port: 0, exposeAll: true });
    await without.close();
    expect(without.mcpAgents).toEqual([]);
    expect(without.serveProblem).toMatch(/modules\[0\]: cannot load .*no-such-module/);
  });

  it('says in one line how to install a missing SDK: keel serve serves over the protocols it can, keel mcp needs MCP’s', async () => {
    const { configPath } = writeTestConfig('mcp-no-sdk', {
      taskQueue: worker.taskQueue,
      server: { enabled: false },
      modules: [join(ROOT, 'test', 'fixtures', 'mcp-agents.ts')],
      serve: { agents: ['mcp-helper'] },
    });
    const hide = (packages: string) => ({ NODE_OPTIONS: `--require ${join(ROOT, 'test', 'fixtures', 'hide-package.cjs')}`, KEEL_TEST_HIDE_PACKAGE: packages });
    const mcpMissing = 'serving MCP needs @modelcontextprotocol/sdk, which is not installed: npm install @modelcontextprotocol/sdk';
    const mcp = await runKeel(['mcp', '--config', configPath], { env: hide('@modelcontextprotocol/sdk') });
    expect(mcp.code, mcp.stderr).toBe(1);
    expect(mcp.stderr).toBe(`keel: FAILED_PRECONDITION: ${mcpMissing}\n`);
    expect(mcp.stdout).toBe('');
    const neither = await runKeel(['serve', '--config', configPath, '--port', '0'], { env: hide('@modelcontextprotocol/sdk,@a2a-js/sdk') });
    expect(neither.code, neither.stderr).toBe(1);
    expect(neither.stderr).toBe(
      `keel: FAILED_PRECONDITION: serve.agents: ${mcpMissing}; serving A2A needs @a2a-js/sdk, which is not installed: npm install @a2a-js/sdk\n`,
    );
    const a2aOnly = track(spawnKeel(['serve', '--config', configPath, '--port', '0'], { env: hide('@modelcontextprotocol/sdk') }));
    await a2aOnly.waitFor(/keel: A2A at http:\/\/\S+\/a2a\/<agent> \(mcp-helper\)/);
    expect(a2aOnly.stderr()).toContain(`keel: ${mcpMissing}\n`);
    expect(a2aOnly.stderr()).not.toContain('keel: MCP at');
  });

  it('keel serve says where MCP is and serves it', async () => {
    const { configPath } = writeTestConfig('mcp-serve', {
      taskQueue: worker.taskQueue,
      server: { enabled: false },
      modules: [join(ROOT, 'test', 'fixtures', 'mcp-agents.ts')],
      serve: { agents: ['mcp-helper', 'mcp-structured'] },
    });
    const serve = track(spawnKeel(['serve', '--config', configPath, '--port', '0']));
    await serve.waitFor(/keel: MCP at http:\/\/\S+ \(mcp-helper, mcp-structured\)/);
    const line = serve.stderr();
    const client = new Client({ name: 'keel-serve-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(/MCP at (\S+)/.exec(line)![1]!)));
    clients.push(client);
    expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['mcp-helper', 'mcp-structured']);
  });

  it('refuses to start with serve.agents naming an agent that is not defined', async () => {
    await expect(startUiServer({ config: configFor({ agents: ['mcp-helper', 'nobody'] }), port: 0 })).rejects.toThrow(
      /serve\.agents\[1\]: no agent "nobody" is defined; defined: .*mcp-helper/,
    );
  });

  it('answers the example client of docs/mcp.md', async () => {
    const example = spawnCommand(process.execPath, [
      '--import',
      'tsx',
      join(ROOT, 'examples', 'mcp', 'ask-agent.ts'),
      `${ui.origin}/mcp`,
      'mcp-helper',
      'what',
      'is',
      'it?',
    ]);
    expect(await example.exited).toBe(0);
    expect(example.stdout()).toBe('the answer: life: 42\n');
    expect(example.stderr()).toContain('… calling mcp_lookup');
  });

  it('serves the same tools over stdio (keel mcp)', async () => {
    const { configPath } = writeTestConfig('mcp-stdio', {
      taskQueue: worker.taskQueue,
      server: { enabled: false },
      modules: [join(ROOT, 'test', 'fixtures', 'mcp-agents.ts')],
      serve: { agents: ['mcp-helper'] },
    });
    const client = await stdioClient(configPath);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['mcp-helper']);
    const result = (await client.callTool({ name: 'mcp-helper', arguments: { prompt: 'what is it?' } })) as CallToolResult;
    expect(textOf(result)).toBe('the answer: life: 42');
  });

  it('answers a call whose worker was SIGKILLed mid-tool, without running a finished tool again', async () => {
    // turn 1: record_fast and slow_work (4 s) at once; the worker running slow_work is killed; turn 2: "done"
    const { dir, configPath } = writeTestConfig('mcp-crash', {
      ...CRASH_AGENT_CONFIG,
      serve: { agents: ['crash'] },
    });
    const workers = [0, 1].map(() => track(spawnKeel(['worker', '--config', configPath], { env: { KEEL_TEST_DIR: dir } })));
    await Promise.all(workers.map((process) => process.waitFor(/keel: worker \d+ on task queue/)));
    const client = await stdioClient(configPath);
    const call = client.callTool({ name: 'crash', arguments: { prompt: 'go' } }, undefined, { timeout: 120_000, resetTimeoutOnProgress: true });
    await expect.poll(() => linesOf(join(dir, 'slow.log')).length, { timeout: 30_000 }).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const victimPid = linesOf(join(dir, 'slow.log'))[0]!.split(' ')[1];
    workers.find((process) => String(process.child.pid) === victimPid)!.kill('SIGKILL');
    const result = (await call) as CallToolResult;
    expect(textOf(result)).toBe('done');
    expect(linesOf(join(dir, 'fast.log')), 'record_fast finished before the kill and must not run again').toHaveLength(1);
    expect(linesOf(join(dir, 'slow.log')).filter((line) => line.startsWith('end '))).toHaveLength(1);
  });
});
