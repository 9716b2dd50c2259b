/**
 * The model activity reads a request too large to travel inline (over 8 KiB) back from the
 * run through the `modelRequest` query. While no workflow worker can answer (all of them down or restarting), the read
 * goes on trying, heartbeating, for as long as the attempt's own timeouts allow (then the
 * activity's retry policy takes over), instead of failing the run.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, Runtime, Worker, type NativeConnection } from '@temporalio/worker';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { createActivities } from '../src/worker/create-activities';
import { KeelClient } from '../src/client/keel-client';
import type { KeelConfig } from '../src/config/schema';
import { defineAgent } from '../src/define';
import { scriptedModel, textReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { connectClient, connectWorker } from '../src/worker/connect';
import { scheduledActivities } from './support/history';
import { testConfig } from './support/harness';

const EventType = temporal.api.enums.v1.EventType;

/** Attempts (and the failure each retry followed) of every started callModel activity. */
async function callModelAttempts(client: Client, runId: string): Promise<Array<{ attempt: number; lastFailure?: string }>> {
  const history = await client.workflow.getHandle(runId).fetchHistory();
  const events = history.events ?? [];
  const callModelIds = new Set(
    events.filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel').map((event) => String(event.eventId)),
  );
  return events
    .filter(
      (event) =>
        event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED && callModelIds.has(String(event.activityTaskStartedEventAttributes?.scheduledEventId)),
    )
    .map((event) => {
      const started = event.activityTaskStartedEventAttributes!;
      return { attempt: started.attempt ?? 0, ...(started.lastFailure?.message ? { lastFailure: started.lastFailure.message } : {}) };
    });
}

/** The attempt of the run's pending callModel activity, or how its last attempt failed for good. */
async function modelActivityState(client: Client, runId: string): Promise<{ attempt: number; failure?: string }> {
  const handle = client.workflow.getHandle(runId);
  const pending = (await handle.describe()).raw.pendingActivities?.find((activity) => activity.activityType?.name === 'callModel');
  if (pending) return { attempt: pending.attempt ?? 0 };
  const failed = (await handle.fetchHistory()).events?.find((event) => event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED);
  const failure = failed?.activityTaskFailedEventAttributes?.failure;
  return {
    attempt: 0,
    ...(failure
      ? {
          failure: `${failure.message ?? ''} (${failure.applicationFailureInfo?.type ?? '?'}, non-retryable: ${failure.applicationFailureInfo?.nonRetryable ?? false})`,
        }
      : {}),
  };
}

try {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
} catch {
  // already installed in this test process
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs a worker until the test ends (or until the returned stop is called). */
function running(worker: Worker): () => Promise<void> {
  const done = worker.run();
  const stop = async (): Promise<void> => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await done;
  };
  cleanups.push(stop);
  return stop;
}

/**
 * A worker that runs the generate workflow and, with `lookup`, of the activities only the agent
 * lookup (`resolveAgent`): a model call it is handed fails as not registered here (retryable),
 * so the model activity runs only where a test wants it.
 */
function workflowWorker(config: KeelConfig, registry: Registry, connection: NativeConnection, client: Client, { lookup = true } = {}): Promise<Worker> {
  return Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.taskQueue,
    workflowBundle: { codePath: inject('bundlePath') },
    activities: { resolveAgent: createActivities({ registry, config, client }).resolveAgent },
    // Without the lookup: workflow tasks only (an activity worker runs beside it in this process).
    enableNonLocalActivities: lookup,
    stickyQueueScheduleToStartTimeout: config.worker.stickyQueueScheduleToStartTimeout,
  });
}

describe('model activity retries', () => {
  it('retries reading the model request while no workflow worker can answer, then completes the run', async () => {
    // turn 1: the model answers "answered after the workflow worker came back"; its activity
    // first runs while the only workflow worker is gone, so the request cannot be read.
    // (The heartbeat timeout is long so that only the read's own failure can cause a retry.)
    const config = testConfig({
      worker: { stickyQueueScheduleToStartTimeout: '1 second' },
      activities: { model: { heartbeatTimeout: '1 minute', retry: { initialInterval: '500ms', backoffCoefficient: 1, maximumAttempts: 50 } } },
    });
    const model = scriptedModel({ name: 'scripted/infra-retry', script: [textReply('answered after the workflow worker came back')] });
    const registry = new Registry().add(model, defineAgent({ name: 'infra-retry', model: model.name }));
    const [connection, client] = await Promise.all([connectWorker(config), connectClient(config)]);
    cleanups.push(async () => {
      await connection.close();
      await client.connection.close();
    });

    const stopFirstWorkflowWorker = running(await workflowWorker(config, registry, connection, client));
    const handle = await new KeelClient({ temporal: client, taskQueue: config.taskQueue }).start('infra-retry', `hello ${'x'.repeat(10_000)}`);
    await expect.poll(() => scheduledActivities(client, handle.runId), { timeout: 20_000 }).toContain('callModel');
    await stopFirstWorkflowWorker();
    const attemptsBefore = (await modelActivityState(client, handle.runId)).attempt;

    // Only activity tasks are served now: the request read cannot be answered.
    const activityWorker = await Worker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.taskQueue,
      activities: createActivities({ registry, config, client, modelRequestTimeout: '1 second' }),
    });
    running(activityWorker);
    // Several reads go unanswered (each waits 1 s): the attempt keeps trying, within its own timeout.
    await new Promise((resolve) => setTimeout(resolve, 8000));
    expect((await modelActivityState(client, handle.runId)).failure, 'the model activity failed instead of going on trying').toBeUndefined();
    expect(model.requests, 'the model must not be called before its request can be read').toHaveLength(0);

    running(await workflowWorker(config, registry, connection, client, { lookup: false }));
    const result = await handle.result();
    expect(result.text).toBe('answered after the workflow worker came back');
    expect(model.requests).toHaveLength(1);

    // One attempt bridged the whole outage (the first, or the one after the stopped worker's).
    const attempts = await callModelAttempts(client, handle.runId);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.attempt).toBeLessThanOrEqual(attemptsBefore + 1);
  });
});
