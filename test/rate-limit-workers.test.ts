/**
 * A rate-limited model's calls when a worker dies: two `keel worker` processes poll the model's
 * own task queue (concurrency 1 each); one is SIGKILLed while it has a call in flight. Its call
 * is noticed by the heartbeat timeout and made again on the other worker, every run completes
 * with one answer, and the provider never has more calls in flight than the workers' caps allow.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { modelTaskQueue } from '../src/core/rate-limit';
import { fakeChatProvider } from './support/fake-chat-provider';
import { spawnKeel, writeTestConfig, type KeelProcess } from './support/processes';

const provider = fakeChatProvider();
let config = '';
let client: KeelClient;
const workers: KeelProcess[] = [];

beforeAll(async () => {
  provider.state.delayMs = 1500;
  const baseUrl = await provider.listen();
  config = writeTestConfig('rate-limit-workers', {
    server: { enabled: false },
    models: [{ name: 'openai/limited', provider: 'openai-compatible', baseUrl, rateLimit: { concurrency: 1, requestsPerSecond: 20 } }],
    agents: [{ name: 'limited', model: 'openai/limited' }],
    // A killed worker's call is noticed within 2 s and tried again 200 ms later.
    activities: { model: { heartbeatTimeout: '2 seconds', retry: { initialInterval: '200 milliseconds' } } },
  }).configPath;
  for (let index = 0; index < 2; index++) workers.push(spawnKeel(['worker', '--config', config]));
  await Promise.all(workers.map((worker) => worker.waitFor(/keel: worker \d+ on task queue/)));
  client = await KeelClient.connect(loadConfig({ path: config }));
});
afterAll(async () => {
  await client?.close();
  for (const worker of workers) worker.kill('SIGKILL');
  await Promise.all(workers.map((worker) => worker.exited));
  await provider.close();
});

describe('a rate-limited model when a worker is killed', () => {
  it("moves the killed worker's call to the other worker: every run completes, never more calls in flight than the caps", async () => {
    const handles = await Promise.all(Array.from({ length: 6 }, (_, index) => client.start('limited', `question ${index}`)));
    // Both workers are calling the provider, one call each.
    await expect.poll(() => provider.state.inFlight, { timeout: 30_000, interval: 50 }).toBe(2);
    workers[0]!.kill('SIGKILL');
    await workers[0]!.exited;

    const results = await Promise.all(handles.map((handle) => handle.result()));
    expect(results.map((result) => result.text)).toEqual(Array(6).fill('ok'));
    expect(provider.state.maxInFlight).toBeLessThanOrEqual(2);
    // The killed worker's call was cut off and made again: one more request than runs.
    expect(provider.state.abandoned).toBe(1);
    expect(provider.state.answered).toBe(6);

    // In the history: every call went to the model's queue, and one run's call took a second attempt.
    const modelQueue = modelTaskQueue(loadConfig({ path: config }).taskQueue, 'openai/limited');
    const attempts: number[] = [];
    for (const handle of handles) {
      const history = await client.temporal.workflow.getHandle(handle.runId).fetchHistory();
      const modelCalls = new Set<string>();
      for (const event of history.events ?? []) {
        const scheduled = event.activityTaskScheduledEventAttributes;
        if (scheduled?.activityType?.name === 'callModel') {
          expect(scheduled.taskQueue?.name).toBe(modelQueue);
          modelCalls.add(String(event.eventId));
        }
        const started = event.activityTaskStartedEventAttributes;
        if (started && modelCalls.has(String(started.scheduledEventId))) attempts.push(started.attempt ?? 1);
      }
    }
    expect(attempts.sort()).toEqual([1, 1, 1, 1, 1, 2]);
  });
});
