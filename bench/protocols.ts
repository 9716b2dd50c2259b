/**
 * bench/protocols: what MCP and A2A add to a keel run (docs/mcp.md, docs/a2a.md). One 3-turn
 * scripted agent, called in each round through MCP (a plain call over Streamable HTTP), an MCP
 * task (created, then its result asked for) and A2A (a blocking `SendMessage`), and started
 * directly with `KeelClient` in the same round, the order rotating round by round; each
 * protocol's figure is the median of its per-round ratio to the direct run's wall time. The
 * server is a `keel serve` process of its own (the worker runs in this one); then its memory with
 * 100 open MCP tasks and 100 open A2A tasks, runs waiting for approval. Not a test: prints
 * figures, asserts nothing.
 *
 * Run: npx tsx bench/protocols.ts   (env: BENCH_PROTOCOL_ROUNDS, default 15)
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Role, type Part } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { stringify } from 'yaml';
import { Registry } from '../src/registry';
import * as agents from './protocol-agents';
import { rssOf, startBenchServer, startBenchWorker, untilWaiting } from './harness';
import { median, result } from './report';

const ROUNDS = Number(process.env.BENCH_PROTOCOL_ROUNDS ?? 15);
const OPEN_TASKS = 100;
const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const userMessage = (prompt: string) => ({
  messageId: randomUUID(),
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [text(prompt)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

async function main(): Promise<void> {
  const server = await startBenchServer();
  const bench = await startBenchWorker(server, new Registry().addModuleExports(agents), { worker: { maxConcurrentActivityTaskExecutions: 200 } });
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-protocols-'));
  const configPath = join(dir, 'temporal.yaml');
  writeFileSync(
    configPath,
    stringify({
      temporal: { address: server.address },
      taskQueue: bench.client.taskQueue,
      server: { enabled: false },
      ui: { port: 0 },
      modules: [join(__dirname, 'protocol-agents.ts')],
      serve: { agents: ['bench-3turn', 'bench-held'] },
    }),
  );
  const serve = spawn(process.execPath, [join(__dirname, '..', 'bin', 'keel.cjs'), 'serve', '--config', configPath], { stdio: ['ignore', 'ignore', 'pipe'] });
  const origin = await new Promise<string>((resolve, reject) => {
    let said = '';
    serve.stderr.on('data', (chunk: Buffer) => {
      said += chunk.toString();
      const found = /keel: MCP at (http:\/\/[^/\s]+)\/mcp/.exec(said);
      if (found) resolve(found[1]!);
    });
    serve.once('exit', (code) => reject(new Error(`keel serve exited with ${code}: ${said}`)));
  });
  const ui = { origin };
  const mcp = new Client({ name: 'bench', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${ui.origin}/mcp`)));
  const a2a = await new ClientFactory().createFromUrl(`${ui.origin}/a2a/bench-3turn/`);
  const ways: Record<string, () => Promise<unknown>> = {
    direct: () => bench.client.run('bench-3turn', 'go'),
    mcp: () => mcp.callTool({ name: 'bench-3turn', arguments: { prompt: 'go' } }),
    'mcp task': async () => {
      const { task } = await mcp.request(
        { method: 'tools/call', params: { name: 'bench-3turn', arguments: { prompt: 'go' }, task: {} } },
        CreateTaskResultSchema,
      );
      return mcp.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    },
    a2a: () => a2a.sendMessage({ tenant: '', message: userMessage('go'), configuration: undefined, metadata: undefined }),
  };
  const names = Object.keys(ways);
  const ratios: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
  const walls: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
  // Two warm rounds, not counted.
  for (let round = -2; round < ROUNDS; round++) {
    const order = names.map((_, index) => names[(index + round + 2) % names.length]!);
    const ms: Record<string, number> = {};
    for (const name of order) {
      const started = performance.now();
      await ways[name]!();
      ms[name] = performance.now() - started;
    }
    if (round < 0) continue;
    for (const name of names) {
      walls[name]!.push(ms[name]!);
      ratios[name]!.push(ms[name]! / ms.direct!);
    }
  }
  console.log(`wall per call, median of ${ROUNDS} rounds: ${names.map((name) => `${name} ${median(walls[name]!).toFixed(0)} ms`).join(', ')}`);
  for (const name of names.filter((name) => name !== 'direct'))
    result(`${name} call / direct run, wall (median of ${ROUNDS} rounds)`, median(ratios[name]!), '≤ 1.1', median(ratios[name]!) <= 1.1);

  // The server's memory with open tasks: each is a run waiting in Temporal, not state in the server.
  const before = rssOf(serve.pid!)!;
  const a2aHeld = await new ClientFactory().createFromUrl(`${ui.origin}/a2a/bench-held/`);
  for (let index = 0; index < OPEN_TASKS; index++) {
    await mcp.request({ method: 'tools/call', params: { name: 'bench-held', arguments: { prompt: 'go' }, task: {} } }, CreateTaskResultSchema);
    await a2aHeld.sendMessage({
      tenant: '',
      message: userMessage('go'),
      configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
      metadata: undefined,
    });
  }
  await untilWaiting(bench.temporalClient, 2 * OPEN_TASKS);
  const after = rssOf(serve.pid!)!;
  console.log(`RSS ${(before / 2 ** 20).toFixed(0)} MiB before, ${(after / 2 ** 20).toFixed(0)} MiB with ${OPEN_TASKS} MCP and ${OPEN_TASKS} A2A tasks open`);
  result(`keel serve RSS growth with ${OPEN_TASKS} MCP and ${OPEN_TASKS} A2A tasks open, MiB`, (after - before) / 2 ** 20, '');
  result(`keel serve RSS with ${OPEN_TASKS} MCP and ${OPEN_TASKS} A2A tasks open, MiB`, after / 2 ** 20, '');

  await mcp.close();
  serve.kill('SIGTERM');
  await bench.stop();
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
