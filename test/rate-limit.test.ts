/**
 * Rate limits: a model with `rateLimit` is called through a task queue of its own, which the
 * worker polls with a concurrency cap (and Temporal's server-side rate limit); a provider's 429
 * storm is ridden out by the activity's retries (after Retry-After), not by failing runs. Real
 * runs, a real server, and a local OpenAI-compatible HTTP server counting requests in flight.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../src/define';
import { modelTaskQueue } from '../src/core/rate-limit';
import { Registry } from '../src/registry';
import { modelFromConfig } from '../src/worker/load-registry';
import { scheduledActivities } from './support/history';
import { fakeChatProvider } from './support/fake-chat-provider';
import { sharedTestWorker } from './support/harness';

const provider = fakeChatProvider();
const registry = new Registry();
let baseUrl = '';
beforeAll(async () => {
  baseUrl = await provider.listen();
  registry.add(
    modelFromConfig({
      name: 'openai/limited',
      provider: 'openai-compatible',
      baseUrl,
      rateLimit: { concurrency: 2 },
      price: { inputPerMTok: 1, outputPerMTok: 2 },
    }),
    defineAgent({ name: 'limited', model: 'openai/limited' }),
  );
});
afterAll(() => provider.close());
// Short retries: a 429 is tried again after its Retry-After (1 s).
const worker = sharedTestWorker(registry, { activities: { model: { retry: { initialInterval: '200 milliseconds', maximumAttempts: 20 } } } });

describe('rateLimit', () => {
  it('20 concurrent runs under concurrency 2 never have more than 2 calls in flight, and all complete', async () => {
    provider.state.maxInFlight = 0;
    const handles = await Promise.all(Array.from({ length: 20 }, (_, index) => worker().client.start('limited', `question ${index}`)));
    const results = await Promise.all(handles.map((handle) => handle.result()));
    expect(results.map((result) => result.text)).toEqual(Array(20).fill('ok'));
    expect(provider.state.maxInFlight).toBe(2);
    // the model's price gives each run its cost: 1000 × $1 + 10 × $2 per million
    expect(results[0]!.usage.cost).toBe(0.00102);
    // the call went to the model's own task queue
    const history = await worker().client.temporal.workflow.getHandle(handles[0]!.runId).fetchHistory();
    const queues = (history.events ?? []).flatMap((event) => {
      const scheduled = event.activityTaskScheduledEventAttributes;
      return scheduled?.activityType?.name === 'callModel' ? [scheduled.taskQueue?.name] : [];
    });
    expect(queues).toEqual([modelTaskQueue(worker().taskQueue, 'openai/limited')]);
    expect(await scheduledActivities(worker().client.temporal, handles[0]!.runId)).toEqual(['callModel']);
  });

  it('a 429 storm (Retry-After: 1) backs off through the activity retries: every run completes, none fails', async () => {
    // the first 6 requests are refused with 429
    let seen = 0;
    provider.state.throttled = 0;
    provider.state.throttle = () => ++seen <= 6;
    try {
      const handles = await Promise.all(Array.from({ length: 4 }, (_, index) => worker().client.start('limited', `storm ${index}`)));
      const results = await Promise.all(handles.map((handle) => handle.result()));
      expect(results.map((result) => result.finishReason)).toEqual(['stop', 'stop', 'stop', 'stop']);
      expect(provider.state.throttled).toBe(6);
    } finally {
      provider.state.throttle = () => false;
    }
  });
});
