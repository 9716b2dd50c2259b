/**
 * MCP servers that misbehave, as real server processes: a malformed answer and one over the
 * SDK's 10 MiB stdio limit are protocol errors (the model is told what was wrong, the call is
 * not repeated, a dropped connection's process is closed), a server that never answers meets
 * the server's `callTimeout`, and an HTTP server that is down is named by its URL.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runErrorOf } from '../src/client/keel-client';
import { parseConfig } from '../src/config/load';
import type { KeelConfigInput } from '../src/config/schema';
import type { Message } from '../src/core/messages';
import type { Registry } from '../src/registry';
import { loadRegistry } from '../src/worker/load-registry';
import { freePort } from './support/free-port';
import { startTestWorker, type TestWorker } from './support/harness';
import { ROOT } from './support/processes';

const SERVER = join(ROOT, 'test', 'fixtures', 'mcp-bad-server.mjs');

const opened: Array<{ registry: Registry; worker?: TestWorker }> = [];
afterEach(async () => {
  for (const { registry, worker } of opened.splice(0)) {
    await worker?.stop();
    await registry.close();
  }
});

/** A worker whose `bad` server logs to a fresh file; the agent `name` calls `tool` once, then says done. */
async function workerCalling(name: string, tool: string, server: Record<string, unknown> = {}, extra: KeelConfigInput = {}) {
  const log = join(mkdtempSync(join(tmpdir(), 'keel-mcp-bad-')), 'mcp.log');
  const input: KeelConfigInput = {
    mcpServers: [{ name: 'bad', command: process.execPath, args: [SERVER], env: { MCP_LOG: log }, ...server }],
    activities: { tool: { retry: { initialInterval: '100 milliseconds', maximumAttempts: 5 } } },
    models: [{ name: `scripted/${name}`, script: [{ toolRequests: [{ name: `bad_${tool}`, input: {} }] }, { text: 'done' }] }],
    agents: [{ name, model: `scripted/${name}`, tools: [`bad_${tool}`] }],
    ...extra,
  };
  const registry = await loadRegistry(parseConfig(input, { baseDir: ROOT, env: {} }));
  const entry: (typeof opened)[number] = { registry };
  opened.push(entry);
  entry.worker = await startTestWorker(registry);
  const lines = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []);
  return { worker: entry.worker, lines };
}

const toolOutput = (messages: Message[]) =>
  messages.flatMap((message) => message.content).find((part) => 'toolResponse' in part) as { toolResponse: { output: unknown } } | undefined;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('MCP servers that misbehave', () => {
  it('tells the model a malformed answer is one, and does not call again', async () => {
    const { worker, lines } = await workerCalling('mcp-malformed', 'malformed');
    const result = await worker.client.run('mcp-malformed', 'go');
    expect(result.text).toBe('done');
    expect(toolOutput(result.messages)!.toolResponse.output).toEqual({
      error: expect.stringMatching(
        /^MCP server "bad" \(.*mcp-bad-server\.mjs\) answered tool "malformed" with a malformed result \(not an MCP CallToolResult\): content/,
      ),
    });
    // One server process, one call: a protocol error is not a dropped connection.
    expect(lines().filter((line) => line.endsWith('start'))).toHaveLength(1);
    expect(lines().filter((line) => line.endsWith('call malformed'))).toHaveLength(1);
  });

  it('tells the model an answer over the SDK stdio limit is one, closes that process, and does not call again', async () => {
    const { worker, lines } = await workerCalling('mcp-huge', 'huge');
    const result = await worker.client.run('mcp-huge', 'go');
    expect(result.text).toBe('done');
    expect(toolOutput(result.messages)!.toolResponse.output).toEqual({
      error: expect.stringContaining('answered tool "huge" with a message over the 10 MiB the MCP SDK reads over stdio'),
    });
    expect(lines().filter((line) => line.endsWith('call huge'))).toHaveLength(1);
    const [first] = lines()
      .filter((line) => line.endsWith('start'))
      .map((line) => Number(line.split(' ')[0]));
    await expect.poll(() => alive(first!), { timeout: 10_000 }).toBe(false);
  });

  it('gives up on a server that never answers at the server’s callTimeout, once, saying so', async () => {
    const { worker, lines } = await workerCalling('mcp-silent', 'silent', { callTimeout: '1 second' });
    const started = Date.now();
    const failure = await worker.client.run('mcp-silent', 'go').then(() => undefined, runErrorOf);
    // A tool's failure is the tool's: the run fails INTERNAL, the message says what the server did.
    expect(failure).toMatchObject({ status: 'INTERNAL', message: expect.stringContaining('tool "bad_silent" failed: MCP server "bad"') });
    expect(failure!.message).toContain('did not answer tool "silent" within 1 second (its callTimeout)');
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(lines().filter((line) => line.endsWith('call silent'))).toHaveLength(1);
  });

  it('names the URL of an HTTP server that is down', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/mcp`;
    await expect(loadRegistry(parseConfig({ mcpServers: [{ name: 'down', url }] }, { baseDir: ROOT, env: {} }))).rejects.toThrow(
      new RegExp(`^mcpServers\\[0\\] \\(down\\): MCP server "down" \\(${url.replace(/[.]/g, '\\.')}\\) could not be reached: .*fetch failed`),
    );
  });
});
