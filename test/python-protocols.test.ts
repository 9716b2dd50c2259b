/**
 * keel's agents reached from Python with the official SDKs (docs/mcp.md, docs/a2a.md):
 * examples/python/mcp_call.py (the MCP Python SDK over Streamable HTTP) and
 * examples/python/a2a_send.py (the A2A Python SDK), installed from PyPI into .keel/ by this test.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../src/config/load';
import { Registry } from '../src/registry';
import { startUiServer, type UiServer } from '../src/ui/server';
import * as agents from './fixtures/mcp-agents';
import { startTestWorker, type TestWorker } from './support/harness';
import { ROOT } from './support/processes';

/** The SDK versions the examples are run with. */
const MCP = '2.3.0';
const A2A = '1.3.0';
const VENV = join(ROOT, '.keel', 'python-protocols');
const PYTHON = join(VENV, 'bin', 'python');

const run = promisify(execFile);

let worker: TestWorker;
let ui: UiServer;

beforeAll(async () => {
  const versions = `import importlib.metadata as m; print(m.version('mcp'), m.version('a2a-sdk'))`;
  const installed =
    existsSync(PYTHON) &&
    (await run(PYTHON, ['-c', versions], { encoding: 'utf8' }).then(
      ({ stdout }) => stdout.trim() === `${MCP} ${A2A}`,
      () => false,
    ));
  if (!installed) {
    if (!existsSync(PYTHON)) await run('python3', ['-m', 'venv', VENV]);
    await run(join(VENV, 'bin', 'pip'), ['install', '--quiet', `mcp==${MCP}`, `a2a-sdk==${A2A}`]);
  }
  worker = await startTestWorker(new Registry().addModuleExports(agents));
  const config = parseConfig(
    {
      temporal: { address: inject('temporalAddress') },
      taskQueue: worker.taskQueue,
      server: { enabled: false },
      modules: ['test/fixtures/mcp-agents.ts'],
      serve: { agents: ['mcp-helper', 'mcp-structured'] },
    },
    { baseDir: ROOT, env: {} },
  );
  ui = await startUiServer({ config, port: 0, token: undefined });
}, 180_000);
afterAll(async () => {
  await ui?.close();
  await worker?.stop();
});

/** Runs an example script; its one line of output, parsed. */
async function example<T>(script: string, ...args: string[]): Promise<T> {
  // Asynchronously: the keel worker and server run in this process and must keep serving.
  const { stdout } = await run(PYTHON, [join(ROOT, 'examples', 'python', script), ...args], { encoding: 'utf8', timeout: 60_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as T;
}

describe('keel agents from Python', () => {
  it('answers the MCP Python SDK’s call', async () => {
    const answer = await example<{ tools: string[]; text: string; isError: boolean }>('mcp_call.py', `${ui.origin}/mcp`, 'mcp-helper', 'what is it?');
    expect(answer).toEqual({ tools: ['mcp-helper', 'mcp-structured'], text: 'the answer: life: 42', isError: false });
  });

  it('answers the A2A Python SDK’s message, the task being the run', async () => {
    const answer = await example<{ taskId: string; state: string; text: string }>('a2a_send.py', `${ui.origin}/a2a/mcp-helper/`, 'what is it?');
    expect(answer).toMatchObject({ state: 'TASK_STATE_COMPLETED', text: 'the answer: life: 42' });
    expect((await worker.client.getHandle(answer.taskId).status()).state).toBe('completed');
  });
});
