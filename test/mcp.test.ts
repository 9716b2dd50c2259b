/**
 * MCP servers' tools as keel tools: a small server the test starts (examples/mcp, with tools
 * for the tests), over stdio and over streamable HTTP, declared in temporal.yaml and used by
 * a YAML agent; the idempotency key in the call's _meta, the server's tool errors shown to the
 * model, arguments checked against the tool's schema, the connection reused, and started again
 * after the server crashed mid-call.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runErrorOf } from '../src/client/keel-client';
import { parseConfig } from '../src/config/load';
import type { KeelConfigInput } from '../src/config/schema';
import type { Message } from '../src/core/messages';
import { Registry } from '../src/registry';
import { loadRegistry } from '../src/worker/load-registry';
import { startTestWorker, type TestWorker } from './support/harness';
import { ROOT } from './support/processes';

const SERVER = join(ROOT, 'test', 'fixtures', 'mcp-server.mjs');

const opened: Array<{ registry: Registry; worker?: TestWorker }> = [];
afterEach(async () => {
  for (const { registry, worker } of opened.splice(0)) {
    await worker?.stop();
    await registry.close();
  }
});

/** A registry from a config (MCP servers, models, agents) and a worker serving it. */
async function workerFor(input: KeelConfigInput): Promise<{ registry: Registry; worker: TestWorker }> {
  const registry = await loadRegistry(parseConfig(input, { baseDir: ROOT, env: {} }));
  const entry: (typeof opened)[number] = { registry };
  opened.push(entry);
  entry.worker = await startTestWorker(registry);
  return { registry, worker: entry.worker };
}

const stdioServer = (extra: Record<string, unknown> = {}) => ({ name: 'notes', command: process.execPath, args: [SERVER], ...extra });

/** A scripted model and a YAML agent that ask for `calls` in one turn, then say done. */
function agentCalling(name: string, calls: Array<{ name: string; input: unknown }>, tools = calls.map((call) => call.name)) {
  return {
    models: [{ name: `scripted/${name}`, script: [{ toolRequests: calls }, { text: 'done' }] }],
    agents: [{ name, model: `scripted/${name}`, tools }],
  };
}

/** The tool outputs of a run's conversation, by tool name. */
function outputs(messages: Message[]): Record<string, unknown> {
  return Object.fromEntries(
    messages.flatMap((message) => message.content.flatMap((part) => ('toolResponse' in part ? [[part.toolResponse.name, part.toolResponse.output]] : []))),
  );
}

describe('MCP servers over stdio', () => {
  it("registers the server's tools as <name>_<tool> and runs them as activities, with the idempotency key in _meta", async () => {
    const { registry, worker } = await workerFor({
      mcpServers: [stdioServer()],
      ...agentCalling('mcp-notes', [
        { name: 'notes_add_note', input: { text: 'buy milk' } },
        { name: 'notes_whoami', input: {} },
      ]),
    });
    expect([...registry.tools.keys()].sort()).toEqual(['notes_add_note', 'notes_chart', 'notes_crash_once', 'notes_fail', 'notes_list_notes', 'notes_whoami']);
    expect(registry.tools.get('notes_add_note')!.description).toBe('Adds a line to the notebook.');

    const handle = await worker.client.start('mcp-notes', 'note it');
    const result = await handle.result();
    expect(result.text).toBe('done');
    const out = outputs(result.messages) as { notes_add_note: { count: number; idempotencyKey: string; pid: number }; notes_whoami: string };
    expect(out.notes_add_note).toMatchObject({ count: 1, idempotencyKey: expect.stringMatching(new RegExp(`^${handle.runId}/`)) });
    // One connection per worker: both calls reached the same server process.
    expect(Number(out.notes_whoami)).toBe(out.notes_add_note.pid);
  });

  it("gives the model a tool's image content as a media part (a data URI), not as base64 text", async () => {
    const { worker } = await workerFor({ mcpServers: [stdioServer()], ...agentCalling('mcp-chart', [{ name: 'notes_chart', input: {} }]) });
    const result = await (await worker.client.start('mcp-chart', 'chart it')).result();
    expect(result.text).toBe('done');
    expect(outputs(result.messages).notes_chart).toEqual({
      content: [{ text: 'the chart' }, { media: { url: 'data:image/png;base64,iVBORw0KGgo=', contentType: 'image/png' } }],
    });
  });

  it("shows the server's tool errors to the model, and refuses arguments that fail the tool's schema", async () => {
    const { worker } = await workerFor({
      mcpServers: [stdioServer()],
      ...agentCalling('mcp-fail', [{ name: 'notes_fail', input: { message: 'the notebook is locked' } }]),
    });
    const result = await worker.client.run('mcp-fail', 'try');
    expect(outputs(result.messages)).toEqual({ notes_fail: { error: 'the notebook is locked' } });

    const { worker: strict } = await workerFor({
      mcpServers: [stdioServer()],
      ...agentCalling('mcp-bad-args', [{ name: 'notes_add_note', input: { text: 42 } }]),
    });
    const failure = await strict.client.run('mcp-bad-args', 'try').then(() => undefined, runErrorOf);
    expect(failure).toMatchObject({ status: 'INVALID_ARGUMENT', message: expect.stringContaining('text') });
  });

  it('connects again when the server crashed mid-call: the call is retried on a new server process', async () => {
    const marker = join(mkdtempSync(join(tmpdir(), 'keel-mcp-')), 'crashed');
    const { worker } = await workerFor({
      mcpServers: [stdioServer({ env: { CRASH_MARKER: marker } })],
      activities: { tool: { retry: { initialInterval: '100 milliseconds' } } },
      ...agentCalling('mcp-crash', [{ name: 'notes_crash_once', input: {} }]),
    });
    const result = await worker.client.run('mcp-crash', 'crash');
    const crashedPid = readFileSync(marker, 'utf8');
    const survived = outputs(result.messages).notes_crash_once as string;
    expect(survived).toMatch(/^survived in \d+$/);
    expect(survived).not.toBe(`survived in ${crashedPid}`);
  });

  it('registers only the allowed tools, under the prefix given, and says what is wrong with an entry', async () => {
    const { registry } = await workerFor({ mcpServers: [stdioServer({ toolPrefix: 'nb_', tools: ['add_note', 'list_notes'] })] });
    expect([...registry.tools.keys()].sort()).toEqual(['nb_add_note', 'nb_list_notes']);

    const load = (input: KeelConfigInput) => loadRegistry(parseConfig(input, { baseDir: ROOT, env: {} }));
    await expect(load({ mcpServers: [stdioServer({ tools: ['add_note', 'erase'] })] })).rejects.toThrow(
      'mcpServers[0] (notes): tools: the server has no tool "erase"; it has: add_note, list_notes, fail, crash_once, whoami',
    );
    await expect(
      load({ mcpServers: [stdioServer({ tools: ['add_note'] })], ...agentCalling('mcp-unknown', [{ name: 'notes_list_notes', input: {} }]) }),
    ).rejects.toThrow('agents[0].tools[0]: tool "notes_list_notes" is not registered; registered tools: notes_add_note');
    await expect(load({ mcpServers: [{ name: 'nowhere', command: join(ROOT, 'no-such-server') }] })).rejects.toThrow(/^mcpServers\[0\] \(nowhere\): /);
    expect(() => parseConfig({ mcpServers: [{ name: 'two words', command: 'x' }] })).toThrow(/mcpServers\[0\]/);
  });
});

describe('MCP servers over streamable HTTP', () => {
  let server: ChildProcess | undefined;
  afterEach(() => {
    server?.kill('SIGKILL');
  });

  it('registers and calls the tools of a server at a URL', async () => {
    server = spawn(process.execPath, [SERVER, '--http', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const port = await new Promise<number>((resolve, reject) => {
      server!.stdout!.on('data', (chunk: Buffer) => {
        const match = /listening (\d+)/.exec(chunk.toString());
        if (match) resolve(Number(match[1]));
      });
      server!.once('exit', (code) => reject(new Error(`the MCP server exited (${code})`)));
    });
    const { worker } = await workerFor({
      mcpServers: [{ name: 'web', url: `http://127.0.0.1:${port}/mcp` }],
      ...agentCalling('mcp-http', [
        { name: 'web_add_note', input: { text: 'over http' } },
        { name: 'web_list_notes', input: {} },
      ]),
    });
    const result = await worker.client.run('mcp-http', 'note it');
    expect(outputs(result.messages)).toMatchObject({ web_add_note: { count: 1 }, web_list_notes: 'over http' });
  });
});
