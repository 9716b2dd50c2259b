/**
 * A rolling deploy (docs/deploys.md, "Rolling deploys"): two real `keel worker` processes share a task
 * queue and the one running a tool call gets SIGTERM. It drains: a call that ends within
 * `worker.shutdownGraceTime` finishes there; a longer one is cancelled at the grace time
 * and moves to the other worker at once (no heartbeat timeout to wait out), with the same
 * idempotency key. Either way the run completes and the tool's work is done exactly once.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { ROOT, killAfterEach, runKeel, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);

/** Lines of slow.log, split into words: `start|end <pid> <attempt> <idempotencyKey>`. */
function slowLog(dir: string): string[][] {
  const file = join(dir, 'slow.log');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' '));
}

/** Each completed model and tool activity of a run as [activity type, pid of the worker that completed it], in order (the agent lookup left out). */
async function completedBy(client: KeelClient, runId: string): Promise<Array<[string, string]>> {
  const events = (await client.temporal.workflow.getHandle(runId).fetchHistory()).events ?? [];
  const typeOf = new Map(
    events
      .filter((event) => event.activityTaskScheduledEventAttributes)
      .map((event) => [String(event.eventId), event.activityTaskScheduledEventAttributes!.activityType!.name!]),
  );
  return events
    .map((event) => event.activityTaskCompletedEventAttributes)
    .filter((completed) => !!completed)
    .map((completed): [string, string] => [typeOf.get(String(completed.scheduledEventId))!, completed.identity!.split('@')[0]!])
    .filter(([type]) => type !== 'resolveAgent');
}

/**
 * Two workers on a fresh queue with the given grace time, a run whose one tool call is
 * `slow_work(seconds)`, and the worker that took the call (found by the pid it logged).
 */
async function runWithToolInFlight({ shutdownGraceTime, seconds }: { shutdownGraceTime: string; seconds: number }) {
  const { dir, configPath } = writeTestConfig('deploy', {
    worker: { shutdownGraceTime },
    // A heartbeat timeout far longer than the test: a call that moves did not wait for it.
    activities: { tool: { startToCloseTimeout: '2 minutes', heartbeatTimeout: '60 seconds', retry: { initialInterval: '200ms' } } },
    modules: [join(ROOT, 'test', 'fixtures', 'crash-agents.ts')],
    models: [{ name: 'scripted/crash', script: [{ toolRequests: [{ name: 'slow_work', input: { seconds } }] }, { text: 'deployed' }] }],
  });
  const env = { KEEL_TEST_DIR: dir };
  const workers = [spawnKeel(['worker', '--config', configPath], { env }), spawnKeel(['worker', '--config', configPath], { env })].map(track);
  await Promise.all(workers.map((worker) => worker.waitFor(/keel: worker \d+ on task queue/)));
  const client = await KeelClient.connect(loadConfig({ path: configPath }));
  const handle = await client.start('crash', 'go');
  await expect.poll(() => slowLog(dir).length, { timeout: 30_000 }).toBeGreaterThan(0);
  const pid = slowLog(dir)[0]![1];
  const victim = workers.find((worker) => String(worker.child.pid) === pid);
  expect(victim, `slow_work ran in pid ${pid}, not one of the workers`).toBeDefined();
  const survivor = workers.find((worker) => worker !== victim)!;
  return { dir, client, handle, victim: victim!, survivor };
}

describe('keel worker on SIGTERM', () => {
  it('finishes the tool call under way before exiting, and the run completes on the other worker', async () => {
    // turn 1: slow_work(3 s); 1 s in, its worker gets SIGTERM (grace time 30 s) and finishes it
    // turn 2: the model, on the remaining worker, answers "deployed"
    const { dir, client, handle, victim, survivor } = await runWithToolInFlight({ shutdownGraceTime: '30 seconds', seconds: 3 });
    try {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      victim.kill('SIGTERM');
      expect(await victim.exited).toBe(0);
      const pid = String(victim.child.pid);
      const key = slowLog(dir)[0]![3]!;
      expect(slowLog(dir), 'the worker exited only after the call it was running had finished').toEqual([
        ['start', pid, '1', key],
        ['end', pid, '1', key],
      ]);
      const result = await handle.result();
      expect(result.text).toBe('deployed');
      expect(result.messages.find((message) => message.role === 'tool')?.content).toEqual([
        { toolResponse: { name: 'slow_work', ref: '0', output: { worked: 3 } } },
      ]);
      expect(slowLog(dir), 'nothing ran again').toHaveLength(2);
      const [first, ...rest] = await completedBy(client, handle.runId);
      expect(first?.[0]).toBe('callModel');
      expect(rest).toEqual([
        ['callTool', pid],
        ['callModel', String(survivor.child.pid)],
      ]);
    } finally {
      await client.close();
    }
  });

  it('moves a tool call that outlasts the grace time to the other worker with the same idempotency key', async () => {
    // turn 1: slow_work(4 s); 1 s in, its worker gets SIGTERM (grace time 1 s): the call is
    //         cancelled there and retried at once on the other worker, where it finishes
    // turn 2: the model answers "deployed"
    const { dir, client, handle, victim, survivor } = await runWithToolInFlight({ shutdownGraceTime: '1 second', seconds: 4 });
    try {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const stoppedAt = Date.now();
      victim.kill('SIGTERM');
      expect(await victim.exited).toBe(0);
      const result = await handle.result();
      expect(result.text).toBe('deployed');
      expect(result.messages.find((message) => message.role === 'tool')?.content).toEqual([
        { toolResponse: { name: 'slow_work', ref: '0', output: { worked: 4 } } },
      ]);
      // grace (1 s) + retry (0.2 s) + the 4 s call + turn 2, well inside the 60 s heartbeat timeout
      expect(Date.now() - stoppedAt).toBeLessThan(20_000);
      const [victimPid, survivorPid] = [String(victim.child.pid), String(survivor.child.pid)];
      const key = slowLog(dir)[0]![3]!;
      expect(key).toMatch(new RegExp(`^${handle.runId}/[0-9a-f-]{36}/\\d+$`));
      expect(slowLog(dir), 'the work finished once, on the worker that kept running').toEqual([
        ['start', victimPid, '1', key],
        ['start', survivorPid, '2', key],
        ['end', survivorPid, '2', key],
      ]);
      expect((await completedBy(client, handle.runId)).slice(1)).toEqual([
        ['callTool', survivorPid],
        ['callModel', survivorPid],
      ]);
    } finally {
      await client.close();
    }
  });
});

describe('a worker that lacks the run’s agent, model and tool on the same queue', () => {
  it('fails no run: each call it refuses is retried until a worker that has it takes it', async () => {
    // Each run: the model (on either worker) asks for record_fast and slow_work, then answers done. The stale worker, started
    // from another project's config, has neither the agent, nor its model, nor its tool.
    const {
      dir,
      configPath: good,
      taskQueue,
    } = writeTestConfig('deploy-mixed', {
      // Two attempts a call: the stale worker often takes both, and the run schedules the call again.
      activities: {
        model: { retry: { initialInterval: '200ms', maximumInterval: '1 second', maximumAttempts: 2 } },
        tool: { retry: { initialInterval: '200ms', maximumInterval: '1 second', maximumAttempts: 2 } },
      },
      // One call at a time, each tool call a little slow: calls wait in the queue.
      worker: { maxConcurrentActivityTaskExecutions: 2 },
      modules: [join(ROOT, 'test', 'fixtures', 'crash-agents.ts')],
      models: [
        {
          name: 'scripted/crash',
          script: [
            {
              toolRequests: [
                { name: 'record_fast', input: {} },
                { name: 'slow_work', input: { seconds: 0.2 } },
              ],
            },
            { text: 'done' },
          ],
        },
      ],
    });
    // The stale worker's retry time is short, and it joins a queue whose calls have waited longer than that
    // behind a good worker that is stopped (SIGSTOP) until the stale one has refused a call, however fast
    // either starts on a busy machine: a call's clock starts at its first refusal, not when it was
    // scheduled, and runs on while the good worker, which never refused it, polls.
    const { configPath: stale } = writeTestConfig('deploy-stale', {
      taskQueue,
      worker: { notRegisteredRetryFor: '1 second' },
      modules: [join(ROOT, 'test', 'fixtures', 'guard-agents.ts')],
    });
    const env = { KEEL_TEST_DIR: dir };
    const goodWorker = track(spawnKeel(['worker', '--config', good], { env }));
    await goodWorker.waitFor(/keel: worker \d+ on task queue/);
    const client = await KeelClient.connect(loadConfig({ path: good }));
    try {
      const handles = await Promise.all(Array.from({ length: 40 }, () => client.start('crash', 'go')));
      await new Promise((resolve) => setTimeout(resolve, 2000));
      goodWorker.kill('SIGSTOP');
      const workers = [goodWorker, track(spawnKeel(['worker', '--config', stale], { env }))];
      try {
        await workers[1]!.waitFor(/refused a call: (agent "crash"|model "scripted\/crash"|tool "record_fast")/, 90_000);
      } finally {
        goodWorker.kill('SIGCONT');
      }
      const outcomes = await Promise.all(
        handles.map((handle) =>
          handle.result().then(
            (result) => result.text,
            (error: Error) => `failed: ${error.message}`,
          ),
        ),
      );
      expect(outcomes).toEqual(Array(40).fill('done'));
      expect(readFileSync(join(dir, 'fast.log'), 'utf8').trim().split('\n')).toHaveLength(40);
    } finally {
      await client.close();
    }
  });

  it('keel run of an agent no worker has exits 2 within seconds after a worker restart, and the worker logs one line', async () => {
    // As in keel dev after a save: the queue's poller list still names the worker that stopped.
    const { configPath, taskQueue } = writeTestConfig('deploy-restarted', { modules: [join(ROOT, 'test', 'fixtures', 'guard-agents.ts')] });
    const before = track(spawnKeel(['worker', '--config', configPath]));
    await before.waitFor(/keel: worker \d+ on task queue/);
    const warmUp = await runKeel(['run', 'guarded', 'go', '--detach', '--config', configPath]);
    expect(warmUp.code, warmUp.stderr).toBe(0);
    before.kill('SIGTERM');
    await before.exited;
    const after = track(spawnKeel(['worker', '--config', configPath]));
    await after.waitFor(/keel: worker \d+ on task queue/);
    const started = Date.now();
    const run = await runKeel(['run', 'nobody-has-me', 'hi', '--config', configPath]);
    expect(run.code).toBe(2);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(run.stderr).toContain(`keel run: unknown agent "nobody-has-me"; the workers polling task queue "${taskQueue}" know: delegator, guarded`);
    // Every attempt of the lookup is refused; the worker says so once and the SDK logs no failure for them.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(after.output().match(/refused a call: agent "nobody-has-me"/g)).toHaveLength(1);
    expect(after.output()).not.toContain('Activity failed');
  });

  it('fails a call no worker has once the retry time is over, naming what was missing and every worker asked', async () => {
    const { configPath, taskQueue } = writeTestConfig('deploy-missing', {
      worker: { notRegisteredRetryFor: '3 seconds' },
      modules: [join(ROOT, 'test', 'fixtures', 'guard-agents.ts')],
    });
    const worker = track(spawnKeel(['worker', '--config', configPath]));
    await worker.waitFor(/keel: worker \d+ on task queue/);
    const client = await KeelClient.connect(loadConfig({ path: configPath }));
    try {
      const started = Date.now();
      const error = await client.run('nobody-has-me', 'go').then(
        () => undefined,
        (failure: Error & { status?: string }) => failure,
      );
      expect(error).toMatchObject({ status: 'NOT_FOUND' });
      expect(error!.message).toContain('agent "nobody-has-me" is not registered on this worker; registered agents: delegator, guarded');
      expect(error!.message).toContain(`no worker of task queue "${taskQueue}" that took the call within 3 seconds has it; asked: worker ${worker.child.pid}@`);
      expect(Date.now() - started).toBeGreaterThanOrEqual(3000);
    } finally {
      await client.close();
    }
  });
});

describe('a call whose every attempt a stale worker refuses', () => {
  it('is scheduled again with the same idempotency key, and runs once a worker that has it comes', async () => {
    // The good worker holds the danger call for approval and stops; a stale worker (another
    // project's config: no danger) takes the approval and both attempts of the call; the run
    // schedules the call again instead of failing; a new good worker runs it.
    const {
      dir,
      configPath: good,
      taskQueue,
    } = writeTestConfig('deploy-refused', {
      worker: { notRegisteredRetryFor: '5 minutes' },
      activities: { tool: { retry: { initialInterval: '200ms', maximumInterval: '200ms', maximumAttempts: 2 } } },
      modules: [join(ROOT, 'test', 'fixtures', 'guard-agents.ts')],
    });
    const { configPath: stale } = writeTestConfig('deploy-refused-stale', {
      taskQueue,
      worker: { notRegisteredRetryFor: '5 minutes' },
      modules: [join(ROOT, 'test', 'fixtures', 'crash-agents.ts')],
    });
    const env = { KEEL_TEST_DIR: dir };
    const first = track(spawnKeel(['worker', '--config', good], { env }));
    await first.waitFor(/keel: worker \d+ on task queue/);
    const client = await KeelClient.connect(loadConfig({ path: good }));
    try {
      const handle = await client.start('guarded', 'go');
      await expect.poll(async () => (await handle.status()).interrupts.length, { timeout: 30_000 }).toBe(1);
      const [hold] = (await handle.status()).interrupts;
      first.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      const staleWorker = track(spawnKeel(['worker', '--config', stale], { env }));
      await staleWorker.waitFor(/keel: worker \d+ on task queue/);
      await handle.approve(hold!.id);
      const scheduledCalls = async () => {
        const events = (await client.temporal.workflow.getHandle(handle.runId).fetchHistory()).events ?? [];
        return events.filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'callTool');
      };
      await expect.poll(async () => (await scheduledCalls()).length, { timeout: 60_000 }).toBeGreaterThanOrEqual(2);
      const second = track(spawnKeel(['worker', '--config', good], { env }));
      await second.waitFor(/keel: worker \d+ on task queue/);
      const result = await handle.result();
      expect(result.text).toBe('done');
      const [firstCall, again] = await scheduledCalls();
      const converter = client.temporal.options.loadedDataConverter.payloadConverter;
      const input = converter.fromPayload<{ refusedBefore?: { activityId: string; workers: Array<{ identity: string; has: string[] }> } }>(
        again!.activityTaskScheduledEventAttributes!.input!.payloads![0]!,
      );
      const firstId = firstCall!.activityTaskScheduledEventAttributes!.activityId!;
      expect(input.refusedBefore).toMatchObject({ activityId: firstId, workers: [{ identity: expect.stringMatching(`^${String(staleWorker.child.pid)}@`) }] });
      expect(input.refusedBefore!.workers[0]!.has).toContain('record_fast');
      const description = await client.temporal.workflow.getHandle(handle.runId).describe();
      const ran = readFileSync(join(dir, 'danger.log'), 'utf8').trim().split('\n');
      expect(ran, 'the tool ran once, under the first call’s key').toEqual([`x ${handle.runId}/${description.runId}/${firstId}`]);
      expect(staleWorker.output()).toMatch(/refused a call: tool "danger" is not registered on this worker/);
      // The rescheduling replays deterministically.
      const history = await client.temporal.workflow.getHandle(handle.runId).fetchHistory();
      await Worker.runReplayHistory({ workflowBundle: { codePath: inject('bundlePath') } }, history, handle.runId);
    } finally {
      await client.close();
    }
  });
});

describe('keel worker on a config that registers nothing', () => {
  it('refuses to start, saying why and how to start it anyway', async () => {
    const { configPath } = writeTestConfig('deploy-empty', {});
    const refused = await runKeel(['worker', '--config', configPath]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${configPath} registers no agents, tools or models (modules: none, agents: none)`);
    expect(refused.stderr).toContain('start it anyway with --allow-empty');
    const allowed = track(spawnKeel(['worker', '--config', configPath, '--allow-empty']));
    await allowed.waitFor(/keel: worker \d+ on task queue/);
  });
});
