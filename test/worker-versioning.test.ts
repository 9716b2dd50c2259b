/**
 * Two builds side by side (README, "Safe deploys"): real `keel worker` processes of one Worker
 * Deployment, build a then build b, on one task queue. A run started on build a and waiting
 * for approval when b becomes current finishes on a (pinned, the default); a run started
 * after the switch runs on b; a run of an agent the config marks `autoUpgrade` moves to b at
 * its next step. A session moves at its next turn: a turn held while b becomes current finishes
 * on a, the next turn runs on b, and the session itself is on b. Which build ran what is read
 * from Temporal (each run's versioning info) and from the workers that completed the tool calls.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { ROOT, killAfterEach, spawnKeel, writeTestConfig } from './support/processes';
import { temporalCli } from './support/temporal-cli';
import { join } from 'node:path';

const track = killAfterEach(afterEach);

/** The config of one build: agents `keeper` (pinned by default) and `follower` (autoUpgrade), each holding record_fast for approval. */
function buildConfig(taskQueue: string, deploymentName: string, buildId: string) {
  return writeTestConfig(`build-${buildId}`, {
    taskQueue,
    server: { enabled: false },
    deployment: { name: deploymentName, buildId, agents: { follower: 'autoUpgrade' } },
    modules: [join(ROOT, 'test', 'fixtures', 'crash-agents.ts')],
    models: [{ name: 'scripted/held', script: [{ toolRequests: [{ name: 'record_fast', input: {} }] }, { text: 'recorded' }] }],
    agents: [
      ...['keeper', 'follower'].map((name) => ({ name, model: 'scripted/held', tools: ['record_fast'], use: [{ name: 'toolApproval' }] })),
      { name: 'chat', model: 'scripted/held', tools: ['record_fast'], use: [{ name: 'toolApproval' }], session: 'server' as const },
    ],
  });
}

/** Makes `buildId` the deployment's current build, once its worker has polled (the server refuses a version it has not seen). */
async function makeCurrent(deploymentName: string, buildId: string): Promise<void> {
  await expect
    .poll(
      async () =>
        (await temporalCli(['worker', 'deployment', 'set-current-version', '--deployment-name', deploymentName, '--build-id', buildId, '--yes'])).code,
      {
        timeout: 30_000,
        interval: 500,
      },
    )
    .toBe(0);
}

/** Temporal's VersioningBehavior enum values. */
const BEHAVIORS: Record<number, string> = { 0: 'unspecified', 1: 'pinned', 2: 'autoUpgrade' };

/** The build a run is on, from Temporal's versioning info, and its behavior. */
async function buildOf(client: KeelClient, runId: string): Promise<{ buildId?: string; behavior?: string }> {
  const info = (await client.temporal.workflow.getHandle(runId).describe()).raw.workflowExecutionInfo?.versioningInfo;
  return { buildId: info?.deploymentVersion?.buildId ?? undefined, behavior: BEHAVIORS[info?.behavior ?? 0] };
}

/** The pid of the worker that completed the run's record_fast call. */
async function toolRanOn(client: KeelClient, runId: string): Promise<string | undefined> {
  const events = (await client.temporal.workflow.getHandle(runId).fetchHistory()).events ?? [];
  const scheduled = new Map(
    events.filter((event) => event.activityTaskScheduledEventAttributes).map((event) => [String(event.eventId), event.activityTaskScheduledEventAttributes!]),
  );
  const completed = events
    .map((event) => event.activityTaskCompletedEventAttributes)
    .find((done) => done && scheduled.get(String(done.scheduledEventId))?.activityType?.name === 'callTool');
  return completed?.identity?.split('@')[0];
}

async function approveHold(client: KeelClient, runId: string): Promise<void> {
  const handle = client.getHandle(runId);
  let id: string | undefined;
  await expect.poll(async () => (id = (await handle.pendingInterrupts())[0]?.id), { timeout: 30_000, interval: 300 }).toBeDefined();
  await handle.decide({ interruptId: id!, approved: true });
}

/** Starts build `buildId`'s worker and waits until it polls as that build. */
async function startBuild(config: ReturnType<typeof buildConfig>, deploymentName: string, buildId: string) {
  const worker = track(spawnKeel(['worker', '--config', config.configPath], { env: { KEEL_TEST_DIR: config.dir } }));
  await worker.waitFor(new RegExp(`keel: worker \\d+ on task queue .*build ${deploymentName}/${buildId}`));
  return worker;
}

describe('Worker Versioning: two builds side by side', () => {
  it('keeps a pinned run on its build, starts new runs on the current one, and moves an autoUpgrade agent', async () => {
    const taskQueue = `versioning-${randomUUID()}`;
    const deploymentName = `keel-test-${randomUUID().slice(0, 8)}`;
    const a = buildConfig(taskQueue, deploymentName, 'a');
    const b = buildConfig(taskQueue, deploymentName, 'b');

    const workerA = track(spawnKeel(['worker', '--config', a.configPath], { env: { KEEL_TEST_DIR: a.dir } }));
    await workerA.waitFor(new RegExp(`keel: worker \\d+ on task queue .*build ${deploymentName}/a`));
    await makeCurrent(deploymentName, 'a');
    const client = await KeelClient.connect(loadConfig({ path: a.configPath }));
    try {
      const kept = await client.start('keeper', 'record it');
      const moved = await client.start('follower', 'record it');
      for (const run of [kept, moved]) await expect.poll(async () => (await run.pendingInterrupts()).length, { timeout: 30_000 }).toBe(1);
      expect(await buildOf(client, kept.runId)).toEqual({ buildId: 'a', behavior: 'pinned' });
      expect(await buildOf(client, moved.runId)).toEqual({ buildId: 'a', behavior: 'autoUpgrade' });

      // Build b rolls out and becomes current while both runs wait; build a keeps running for its pinned runs.
      const workerB = track(spawnKeel(['worker', '--config', b.configPath], { env: { KEEL_TEST_DIR: b.dir } }));
      await workerB.waitFor(new RegExp(`keel: worker \\d+ on task queue .*build ${deploymentName}/b`));
      await makeCurrent(deploymentName, 'b');
      const fresh = await client.start('keeper', 'record it');

      for (const run of [kept, moved, fresh]) await approveHold(client, run.runId);
      for (const run of [kept, moved, fresh]) expect((await run.result()).text).toBe('recorded');

      const pidA = String(workerA.child.pid);
      const pidB = String(workerB.child.pid);
      expect(await buildOf(client, kept.runId)).toMatchObject({ buildId: 'a' });
      expect(await toolRanOn(client, kept.runId)).toBe(pidA);
      expect(await buildOf(client, fresh.runId)).toMatchObject({ buildId: 'b' });
      expect(await toolRanOn(client, fresh.runId)).toBe(pidB);
      expect(await buildOf(client, moved.runId)).toMatchObject({ buildId: 'b' });
      expect(await toolRanOn(client, moved.runId)).toBe(pidB);
    } finally {
      await client.close();
    }
  });

  it('moves a session to the current build at its next turn, the turn in flight finishing on its own build', async () => {
    const taskQueue = `versioning-session-${randomUUID()}`;
    const deploymentName = `keel-test-${randomUUID().slice(0, 8)}`;
    const a = buildConfig(taskQueue, deploymentName, 'a');
    const b = buildConfig(taskQueue, deploymentName, 'b');
    const workerA = await startBuild(a, deploymentName, 'a');
    await makeCurrent(deploymentName, 'a');
    const client = await KeelClient.connect(loadConfig({ path: a.configPath }));
    try {
      const session = client.session('chat', `moving-${randomUUID().slice(0, 8)}`);
      const first = await session.send('record it', { detach: true });
      await expect.poll(async () => (await client.getHandle(first.runId).pendingInterrupts()).length, { timeout: 30_000 }).toBe(1);
      expect(await buildOf(client, first.runId)).toEqual({ buildId: 'a', behavior: 'pinned' });

      // Build b becomes current while the first turn waits for its approval.
      const workerB = await startBuild(b, deploymentName, 'b');
      await makeCurrent(deploymentName, 'b');
      await approveHold(client, first.runId);
      expect(await session.waitForSnapshot(first.snapshotId)).toMatchObject({ status: 'completed' });

      const second = await session.send('record it again', { detach: true });
      await approveHold(client, second.runId);
      expect(await session.waitForSnapshot(second.snapshotId)).toMatchObject({ status: 'completed' });

      const pidA = String(workerA.child.pid);
      const pidB = String(workerB.child.pid);
      expect(await buildOf(client, first.runId)).toEqual({ buildId: 'a', behavior: 'pinned' });
      expect(await toolRanOn(client, first.runId)).toBe(pidA);
      expect(await buildOf(client, second.runId)).toEqual({ buildId: 'b', behavior: 'pinned' });
      expect(await toolRanOn(client, second.runId)).toBe(pidB);
      expect(await buildOf(client, session.workflowId)).toEqual({ buildId: 'b', behavior: 'autoUpgrade' });
      expect((await session.snapshot()).messageCount).toBe(8);
    } finally {
      await client.close();
    }
  });
});
