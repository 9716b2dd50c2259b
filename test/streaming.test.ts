/**
 * Model output streamed to clients while the run goes on: text pieces travel on the model
 * call's heartbeat (never in history), `RunHandle.events()` yields them with the messages,
 * tool calls, results and the end, a retried call's text is never shown twice, and `keel run`
 * prints the text as it arrives.
 */
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RunHandle } from '../src/client/keel-client';
import { toolApproval } from '../src/features/tool-approval/tool-approval';
import type { RunEvent } from '../src/client/run-events';
import { defineAgent } from '../src/define';
import { retry } from '../src/features/retry/retry';
import { errorReply, scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { add } from './fixtures/tools';
import { startTestWorker, type TestWorker } from './support/harness';
import { killAfterEach, ROOT, spawnKeel, writeTestConfig } from './support/processes';

const streaming = scriptedModel({
  name: 'scripted/streaming',
  script: [toolCallReply({ name: 'add', input: { a: 1, b: 2 } }), { stream: ['Lisbon ', 'is ', 'sunny ', 'today'], chunkDelayMs: 400 }],
});
// The first call streams half an answer and fails; Retry calls again, which streams it whole.
const flaky = scriptedModel({
  name: 'scripted/streaming-flaky',
  script: [
    { ...errorReply('UNAVAILABLE', 'dropped'), stream: ['Hello', ' wor'], chunkDelayMs: 400 },
    { stream: ['Hello', ' wor', 'ld'], chunkDelayMs: 400 },
  ],
});
const held = scriptedModel({ name: 'scripted/streaming-held', script: [toolCallReply({ name: 'add', input: { a: 2, b: 3 } }), textReply('five')] });
const registry = new Registry().add(
  held,
  defineAgent({ name: 'streamer-held', model: held.name, tools: [add], use: [toolApproval({})] }),
  add,
  streaming,
  flaky,
  defineAgent({ name: 'streamer', model: streaming.name, tools: [add] }),
  defineAgent({ name: 'streamer-flaky', model: flaky.name, use: [retry({ maxRetries: 1, initialDelayMs: 10 })] }),
);

let worker: TestWorker;
beforeAll(async () => {
  // Heartbeats (and so the streamed text) reach the server at most this often.
  worker = await startTestWorker(registry, { worker: { maxHeartbeatThrottleInterval: '100 milliseconds' } });
});
afterAll(async () => {
  await worker?.stop();
});

async function collect(events: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

describe('RunHandle.events()', () => {
  it('yields the text as it streams, then the tool calls, results, messages and the end; history holds none of the pieces', async () => {
    const handle = await worker.client.start('streamer', 'weather?');
    const events = await collect(handle.events({ intervalMs: 50 }));

    const texts = events.filter((event): event is Extract<RunEvent, { type: 'text' }> => event.type === 'text');
    const streamed = texts.filter((event) => !event.final);
    expect(streamed.length).toBeGreaterThan(1);
    expect(streamed[0]).toMatchObject({ model: 'scripted/streaming', callIndex: 1, attempt: 1, sequence: expect.any(Number) });
    expect(texts.map((event) => event.delta).join('')).toBe('Lisbon is sunny today');
    // The pieces came before the answer's message.
    const answerIndex = events.findIndex(
      (event) => event.type === 'message' && event.message.role === 'model' && event.message.content.some((part) => 'text' in part),
    );
    expect(events.indexOf(streamed[0]!)).toBeLessThan(answerIndex);
    expect(events.filter((event) => event.type === 'toolCall')).toEqual([{ type: 'toolCall', name: 'add', ref: expect.any(String), input: { a: 1, b: 2 } }]);
    expect(events.filter((event) => event.type === 'toolResult')).toMatchObject([{ type: 'toolResult', name: 'add', output: { sum: 3 } }]);
    expect(events.at(-1)).toEqual({ type: 'end', state: 'completed' });

    const history = await worker.client.temporal.workflow.getHandle(handle.runId).fetchHistory();
    expect(JSON.stringify(history)).not.toContain('keelStream');
  });

  it('never shows the text of a retried model call twice', async () => {
    const handle = await worker.client.start('streamer-flaky', 'hi');
    const events = await collect(handle.events({ intervalMs: 50 }));
    const text = events.flatMap((event) => (event.type === 'text' ? [event.delta] : [])).join('');
    expect(text).toBe('Hello world');
    expect((await handle.result()).text).toBe('Hello world');
  });
});

describe('what a watcher costs', () => {
  it('sends no query while the run waits for a decision, and slows its describes to one a second; the end still comes', async () => {
    const handle = await worker.client.start('streamer-held', 'add');
    const queries = vi.spyOn(RunHandle.prototype, 'reportedStatus');
    const describes = vi.spyOn(RunHandle.prototype, 'inFlight');
    try {
      const events: RunEvent[] = [];
      const watching = (async () => {
        for await (const event of handle.events({ intervalMs: 50, maxIntervalMs: 1000 })) events.push(event);
      })();
      await expect.poll(() => events.some((event) => event.type === 'hold'), { timeout: 20_000 }).toBe(true);
      // The status that showed the hold may have been read before the describe saw the rest of that
      // workflow task's events: the next poll reads it once more. From then on the run waits.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const [queriesAtHold, describesAtHold] = [queries.mock.calls.length, describes.mock.calls.length];
      await new Promise((resolve) => setTimeout(resolve, 4000));
      // 4 s of waiting: no status query at all, and at most 50, 100, ..., 800 ms then 1 s waits of describes.
      expect(queries.mock.calls.length - queriesAtHold).toBe(0);
      expect(describes.mock.calls.length - describesAtHold).toBeLessThanOrEqual(8);
      const [hold] = await handle.pendingHolds();
      await handle.approve(hold!.id);
      await watching;
      expect(events.filter((event) => event.type === 'toolResult')).toHaveLength(1);
      expect(events.at(-1)).toEqual({ type: 'end', state: 'completed' });
      expect(events.filter((event) => event.type === 'text').map((event) => (event as { delta: string }).delta)).toEqual(['five']);
    } finally {
      queries.mockRestore();
      describes.mockRestore();
    }
  });
});

describe('keel run', () => {
  const keep = killAfterEach(afterEach);
  it('prints the text while the model writes it', async () => {
    const { configPath } = writeTestConfig('streaming-cli', {
      worker: { maxHeartbeatThrottleInterval: '100 milliseconds' },
      models: [{ name: 'scripted/cli-stream', script: [{ stream: ['one ', 'two ', 'three ', 'four'], chunkDelayMs: 700 }] }],
      agents: [{ name: 'counter', model: 'scripted/cli-stream' }],
      modules: [join(ROOT, 'examples', 'agents.ts')],
    });
    const env = { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' };
    const workerProcess = keep(spawnKeel(['worker', '--config', configPath], { env }));
    await workerProcess.waitFor(/keel: worker \d+ on task queue/, 120_000);
    const run = keep(spawnKeel(['run', 'counter', 'count', '--config', configPath], { env }));
    await run.waitFor(/model: one /, 60_000);
    // Part of the answer is out while the model is still writing the rest.
    expect(run.stderr()).not.toContain('four');
    expect(await run.exited).toBe(0);
    expect(run.stdout()).toBe('one two three four\n');
    expect(run.stderr().match(/model: /g)).toHaveLength(1);
    expect(run.stderr()).toContain('  model: one two three four\n');
  });
});
