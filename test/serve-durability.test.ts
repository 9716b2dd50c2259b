/**
 * What keel serves to other agents is durable behind the protocols (docs/mcp.md, docs/a2a.md):
 * an MCP task and an A2A task whose worker is SIGKILLed mid-tool while the `keel serve` process
 * that created them is SIGKILLed too still answer a new server's `get`, complete, and no tool runs
 * more often than keel runs it anyway (a finished call never again; the interrupted one once more).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Part } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { killAfterEach, spawnKeel, writeTestConfig, type KeelProcess, CRASH_AGENT_CONFIG } from './support/processes';

const track = killAfterEach(afterEach);
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
});

const linesOf = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });

/** Starts `keel serve` for `configPath`; its address, once it says where MCP is. */
async function serve(configPath: string): Promise<{ process: KeelProcess; origin: string }> {
  const process = track(spawnKeel(['serve', '--config', configPath, '--port', '0']));
  await process.waitFor(/keel: A2A at /);
  return { process, origin: /keel: MCP at (http:\/\/[^/\s]+)\/mcp/.exec(process.stderr())![1]! };
}

async function mcpClient(origin: string): Promise<Client> {
  const client = new Client({ name: 'durability-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${origin}/mcp`)));
  clients.push(client);
  return client;
}

describe('keel serve behind the protocols', () => {
  it('keeps an MCP task and an A2A task through a worker SIGKILLed mid-tool and keel serve SIGKILLed', async () => {
    // Each run: turn 1 calls record_fast and slow_work (4 s) at once; turn 2 answers "done".
    const { dir, configPath } = writeTestConfig('serve-durable', {
      ...CRASH_AGENT_CONFIG,
      serve: { agents: ['crash'] },
    });
    const startWorker = () => track(spawnKeel(['worker', '--config', configPath], { env: { KEEL_TEST_DIR: dir } }));
    const workers = [startWorker(), startWorker()];
    await Promise.all(workers.map((worker) => worker.waitFor(/keel: worker \d+ on task queue/)));
    const first = await serve(configPath);

    const mcp = await mcpClient(first.origin);
    const created = await mcp.request(
      { method: 'tools/call', params: { name: 'crash', arguments: { prompt: 'go' }, task: { ttl: 600_000 } } },
      CreateTaskResultSchema,
    );
    const mcpTask = created.task.taskId;
    const a2a = await new ClientFactory().createFromUrl(`${first.origin}/a2a/crash/`);
    const sent = await a2a.sendMessage({
      tenant: '',
      message: {
        messageId: randomUUID(),
        contextId: '',
        taskId: '',
        role: Role.ROLE_USER,
        parts: [text('go')],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
      metadata: undefined,
    });
    const a2aTask = 'id' in sent ? sent.id : '';
    expect(a2aTask).toMatch(/^a2a-/);

    // Both runs are in slow_work: the workers running it die, and so does the server that took the calls.
    const slowLog = join(dir, 'slow.log');
    await expect.poll(() => linesOf(slowLog).filter((line) => line.startsWith('start ')).length, { timeout: 30_000 }).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const victims = new Set(linesOf(slowLog).map((line) => line.split(' ')[1]));
    for (const worker of workers) if (victims.has(String(worker.child.pid))) worker.kill('SIGKILL');
    first.process.kill('SIGKILL');
    await first.process.exited;
    await startWorker().waitFor(/keel: worker \d+ on task queue/);
    const second = await serve(configPath);

    const later = await mcpClient(second.origin);
    expect(['working', 'completed']).toContain((await later.experimental.tasks.getTask(mcpTask)).status);
    const result = await later.experimental.tasks.getTaskResult(mcpTask, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'done' }]);

    const a2aLater = await new ClientFactory().createFromUrl(`${second.origin}/a2a/crash/`);
    await expect
      .poll(async () => (await a2aLater.getTask({ tenant: '', id: a2aTask, historyLength: undefined })).status?.state, { timeout: 60_000 })
      .toBe(TaskState.TASK_STATE_COMPLETED);

    expect(linesOf(join(dir, 'fast.log')), 'record_fast finished before the kills and must not run again').toHaveLength(2);
    const slow = linesOf(slowLog);
    expect(
      slow.filter((line) => line.startsWith('end ')),
      'each slow_work completes once',
    ).toHaveLength(2);
    expect(slow.filter((line) => line.startsWith('start ')).length).toBeLessThanOrEqual(4);
  });
});
