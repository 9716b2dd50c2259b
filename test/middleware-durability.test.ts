/**
 * What the resilience middleware promise beyond single runs: Retry's backoff is a durable
 * timer (a worker killed mid-wait neither resets nor skips it; cancelling during it ends the
 * run at once with the model's last error), Fallback's skip list lasts one run only, and
 * SoftToolErrors never swallows a cancellation.
 */
import { temporal } from '@temporalio/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { KeelClient, runErrorOf } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { defineAgent, defineTool } from '../src/define';
import { fallback } from '../src/features/fallback/fallback';
import { retry } from '../src/features/retry/retry';
import { softToolErrors } from '../src/features/soft-tool-errors/soft-tool-errors';
import { errorReply, scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { echo } from './fixtures/tools';
import { capturedLogs, startTestWorker } from './support/harness';
import { killAfterEach, spawnKeel, writeTestConfig } from './support/processes';

const EventType = temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const millis = (event: HistoryEvent) => Number(event.eventTime!.seconds) * 1000 + (event.eventTime!.nanos ?? 0) / 1e6;

async function events(client: KeelClient, runId: string): Promise<HistoryEvent[]> {
  return (await client.temporal.workflow.getHandle(runId).fetchHistory()).events ?? [];
}

const track = killAfterEach(afterEach);

describe('retry backoff', () => {
  it('survives a worker killed during the wait: the remaining wait is honoured, not reset', async () => {
    // call 1: UNAVAILABLE → 6 s durable timer; worker A is killed 2 s in, worker B starts 3 s in;
    // call 2 (on B): recovered
    const { configPath } = writeTestConfig('backoff', {
      models: [{ name: 'scripted/backoff', script: [{ error: { status: 'UNAVAILABLE', message: 'busy' } }, { text: 'recovered' }] }],
      agents: [{ name: 'backoff', model: 'scripted/backoff', use: [{ name: 'retry', config: { initialDelayMs: 6000, noJitter: true } }] }],
    });
    const first = spawnKeel(['worker', '--config', configPath]);
    track(first);
    await first.waitFor(/keel: worker \d+ on task queue/);
    const client = await KeelClient.connect(loadConfig({ path: configPath }));
    try {
      const handle = await client.start('backoff', 'go');
      let timerStarted: HistoryEvent | undefined;
      await expect
        .poll(async () => (timerStarted = (await events(client, handle.runId)).find((event) => event.eventType === EventType.EVENT_TYPE_TIMER_STARTED)), {
          timeout: 30_000,
          interval: 100,
        })
        .toBeDefined();
      await new Promise((resolve) => setTimeout(resolve, 2000));
      first.kill('SIGKILL');
      await first.exited;
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const second = spawnKeel(['worker', '--config', configPath]);
      track(second);

      const result = await handle.result();
      expect(result.text).toBe('recovered');
      const history = await events(client, handle.runId);
      // Not reset: worker B replayed the one timer instead of starting a new wait.
      expect(history.filter((event) => event.eventType === EventType.EVENT_TYPE_TIMER_STARTED)).toHaveLength(1);
      expect(history.filter((event) => event.eventType === EventType.EVENT_TYPE_TIMER_FIRED)).toHaveLength(1);
      // Not skipped: the second call came after the full 6 s wait.
      const modelCalls = history.filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel');
      expect(modelCalls).toHaveLength(2);
      expect(millis(modelCalls[1]!) - millis(timerStarted!)).toBeGreaterThanOrEqual(6000);
    } finally {
      await client.close();
    }
  });

  it('ends at once with the last model error when the run is cancelled during the wait', async () => {
    const model = scriptedModel({ name: 'scripted/cancel-backoff', script: [errorReply('UNAVAILABLE', 'overloaded'), textReply('never')] });
    const registry = new Registry().add(model, defineAgent({ name: 'cancel-backoff', model: model.name, use: [retry({ initialDelayMs: 60_000 })] }));
    const worker = await startTestWorker(registry);
    try {
      const handle = await worker.client.start('cancel-backoff', 'go');
      await expect
        .poll(async () => (await events(worker.client, handle.runId)).some((event) => event.eventType === EventType.EVENT_TYPE_TIMER_STARTED), {
          timeout: 30_000,
          interval: 100,
        })
        .toBe(true);
      await handle.cancel();
      const error = await handle.result().then(() => undefined, runErrorOf);
      expect(error).toMatchObject({ status: 'UNAVAILABLE', message: 'overloaded' });
      // At once: the run closed without its 60 s timer firing.
      expect((await events(worker.client, handle.runId)).some((event) => event.eventType === EventType.EVENT_TYPE_TIMER_FIRED)).toBe(false);
      expect(model.requests).toHaveLength(1);
      expect(await handle.status()).toMatchObject({ state: 'cancelled', finishReason: 'aborted', error: { status: 'UNAVAILABLE', message: 'overloaded' } });
    } finally {
      await worker.stop();
    }
  });
});

describe('fallback skip list', () => {
  it('skips a NOT_FOUND primary for the rest of a run, and a new run tries it again', async () => {
    // each run: turn 1 primary NOT_FOUND → secondary asks for echo; turn 2 secondary asks again; turn 3 secondary answers
    const primary = scriptedModel({ name: 'scripted/sticky-primary', script: [errorReply('NOT_FOUND', 'model retired')] });
    const secondary = scriptedModel({
      name: 'scripted/sticky-secondary',
      script: [toolCallReply({ name: 'echo', input: { v: 'a' } }), toolCallReply({ name: 'echo', input: { v: 'b' } }), textReply('done')],
    });
    const registry = new Registry().add(
      primary,
      secondary,
      echo,
      defineAgent({ name: 'sticky', model: primary.name, tools: [echo], use: [fallback({ models: [secondary.name] })] }),
    );
    const worker = await startTestWorker(registry);
    try {
      const first = await worker.client.start('sticky', 'one');
      expect((await first.result()).text).toBe('done');
      const second = await worker.client.start('sticky', 'two');
      expect((await second.result()).text).toBe('done');
      const callsOf = (model: typeof primary, runId: string) => model.requests.filter((request) => request.runId === runId).length;
      for (const run of [first, second]) {
        expect(callsOf(primary, run.runId)).toBe(1);
        expect(callsOf(secondary, run.runId)).toBe(3);
        // One warning per run, on the turn that recorded the failure, naming both models.
        const warnings = capturedLogs.filter((entry) => entry.message === 'model call failed, falling back' && entry.meta?.workflowId === run.runId);
        expect(warnings).toHaveLength(1);
        expect(warnings[0]!.level).toBe('WARN');
        expect(warnings[0]!.meta).toMatchObject({ model: primary.name, fallbackModel: secondary.name });
      }
    } finally {
      await worker.stop();
    }
  });
});

describe('soft tool errors', () => {
  it('never turns a cancellation into a tool response', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const hang = defineTool({
      name: 'hang_soft',
      description: 'Waits until cancelled.',
      input: z.object({}),
      run: (_input, { signal }) =>
        new Promise((_resolve, reject) => {
          started();
          signal.addEventListener('abort', () => reject(new Error('cancelled')));
        }),
    });
    const model = scriptedModel({ name: 'scripted/soft-cancel', script: [toolCallReply({ name: 'hang_soft' }), textReply('should not happen')] });
    const registry = new Registry().add(hang, model, defineAgent({ name: 'soft-cancel', model: model.name, tools: [hang], use: [softToolErrors()] }));
    const worker = await startTestWorker(registry);
    try {
      const handle = await worker.client.start('soft-cancel', 'go');
      await running;
      await handle.cancel();
      expect((await handle.result().then(() => undefined, runErrorOf))?.status).toBe('CANCELLED');
      expect(model.requests).toHaveLength(1);
      expect((await handle.status()).state).toBe('cancelled');
    } finally {
      await worker.stop();
    }
  });
});
