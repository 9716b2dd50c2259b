/**
 * Two builds side by side (docs/deploys.md, "Safe deploys"): real `keel worker` processes of one Worker
 * Deployment, build a then build b, on one task queue. A run started on build a and waiting
 * for approval when b becomes current finishes on a (pinned, the default); a run started
 * after the switch runs on b; a run of an agent the config marks `autoUpgrade` moves to b at
 * its next step. A session moves at its next turn; a long run at continue-as-new where the
 * server supports it. A pinned run whose build lost its workers waits for one (b never takes
 * it), and a forged `keelVersioning` memo cannot choose a behavior keel does not know. The
 * scenarios shared with the cluster lane are in test/support/versioning.ts.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { killAfterEach, spawnKeel, writeTestConfig } from './support/processes';
import { temporalCli } from './support/temporal-cli';
import {
  approveHold,
  buildFields,
  buildOf,
  callsRanBy,
  longRunAtContinueAsNew,
  sessionMovesAtItsNextTurn,
  toolRanOn,
  withTwoBuilds,
  type BuildId,
  type TwoBuilds,
} from './support/versioning';

const track = killAfterEach(afterEach);

/** Runs `check` on builds a and b of a new deployment, on a new task queue of the test server. */
function withNewBuilds(label: string, check: (builds: TwoBuilds) => Promise<void>): Promise<void> {
  const taskQueue = `versioning-${label}-${randomUUID()}`;
  const deploymentName = `keel-test-${randomUUID().slice(0, 8)}`;
  const build = (buildId: BuildId) => {
    const { configPath, dir } = writeTestConfig(`build-${buildId}`, { taskQueue, ...buildFields(deploymentName, buildId) });
    return { config: configPath, dir };
  };
  return withTwoBuilds({ deploymentName, configs: { a: build('a'), b: build('b') }, cli: temporalCli, track }, check);
}

describe('Worker Versioning: two builds side by side', () => {
  it('keeps a pinned run on its build, starts new runs on the current one, and moves an autoUpgrade agent', async () => {
    await withNewBuilds('runs', async (builds) => {
      const { client } = builds;
      const workerA = await builds.start('a');
      await builds.makeCurrent('a');
      const kept = await client.start('keeper', 'record it');
      const moved = await client.start('follower', 'record it');
      for (const run of [kept, moved]) await expect.poll(async () => (await run.pendingHolds()).length, { timeout: 30_000 }).toBe(1);
      expect(await buildOf(client, kept.runId)).toEqual({ buildId: 'a', behavior: 'pinned' });
      expect(await buildOf(client, moved.runId)).toEqual({ buildId: 'a', behavior: 'autoUpgrade' });

      // Build b rolls out and becomes current while both runs wait; build a keeps running for its pinned runs.
      const workerB = await builds.start('b');
      await builds.makeCurrent('b');
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
    });
  });

  it('moves a session to the current build at its next turn, the turn in flight finishing on its own build', async () => {
    await withNewBuilds('session', (builds) => sessionMovesAtItsNextTurn(builds, `moving-${randomUUID().slice(0, 8)}`));
  });

  // Upgrade on continue-as-new needs the server's support (checked on Temporal 1.31.2; the dev server of the suite,
  // 1.29.1, has none, and the cluster lane runs this on 1.31.2). Without it the run finishes on its own build.
  it('moves a pinned long run to the current build when it continues as new, where the server can', async () => {
    await withNewBuilds('long', async (builds) => {
      const { serverVersion } = await builds.client.temporal.workflowService.getSystemInfo({});
      const [major = 0, minor = 0] = serverVersion.split('.').map(Number);
      await longRunAtContinueAsNew(builds, { moves: major > 1 || (major === 1 && minor >= 31) });
    });
  });

  it('keeps a pinned run waiting while its build has no worker, never moving it to the current build', async () => {
    await withNewBuilds('absent', async (builds) => {
      const { client } = builds;
      const workerA = await builds.start('a');
      await builds.makeCurrent('a');
      const run = await client.start('keeper', 'record it');
      let held: Awaited<ReturnType<typeof run.pendingHolds>>[number] | undefined;
      await expect.poll(async () => (held = (await run.pendingHolds())[0]), { timeout: 30_000 }).toBeDefined();
      const workerB = await builds.start('b');
      await builds.makeCurrent('b');
      // Build a's only worker dies; b is current and polls the same queue, but the run is a's.
      workerA.child.kill('SIGKILL');
      await workerA.exited;
      const refused = await run
        .decide({ interruptId: held!.id, toolName: held!.toolName, approved: true }, { timeoutMs: 4_000 })
        .catch((error: unknown) => error);
      expect(refused).toMatchObject({ status: 'DEADLINE_EXCEEDED', message: expect.stringContaining('no worker took the decision') });
      expect((await client.temporal.workflow.getHandle(run.runId).describe()).status.name).toBe('RUNNING');

      // A worker of build a comes back: it applies the decision the server kept, and the run finishes on a.
      const workerA2 = await builds.start('a');
      expect((await run.result()).text).toBe('recorded');
      expect(await buildOf(client, run.runId)).toEqual({ buildId: 'a', behavior: 'pinned' });
      expect(await toolRanOn(client, run.runId)).toBe(String(workerA2.child.pid));
      const events = (await client.temporal.workflow.getHandle(run.runId).fetchHistory()).events ?? [];
      const deciders = new Set(events.map((event) => event.workflowTaskCompletedEventAttributes?.identity?.split('@')[0]).filter(Boolean));
      expect(deciders.has(String(workerB.child.pid))).toBe(false);
      expect(callsRanBy(builds, 'b')).toEqual([]);
      expect(existsSync(join(builds.dir('b'), 'fast.log'))).toBe(false);
    });
  });

  it('honours only pinned and autoUpgrade in a keelVersioning memo a client forged', async () => {
    await withNewBuilds('forged', async (builds) => {
      const { client } = builds;
      await builds.start('a');
      await builds.makeCurrent('a');
      const taskQueue = client.taskQueue;
      const input = JSON.stringify({ agent: 'keeper', messages: [{ role: 'user', content: [{ text: 'record it' }] }] });
      const memos = { bogus: 'keelVersioning="sideways"', number: 'keelVersioning=2', upgrade: 'keelVersioning="autoUpgrade"' };
      const started: Record<string, string> = {};
      for (const [label, memo] of Object.entries(memos)) {
        const workflowId = `forged-${label}-${randomUUID().slice(0, 8)}`;
        const args = [
          'workflow',
          'start',
          '--type',
          'generateWorkflow',
          '--task-queue',
          taskQueue,
          '--workflow-id',
          workflowId,
          '--input',
          input,
          '--memo',
          memo,
        ];
        const sent = await temporalCli(args);
        expect(sent.code, sent.stderr).toBe(0);
        started[label] = workflowId;
      }
      for (const workflowId of Object.values(started))
        await expect.poll(async () => (await client.getHandle(workflowId).pendingHolds()).length, { timeout: 30_000 }).toBe(1);
      expect(await buildOf(client, started.bogus!)).toEqual({ buildId: 'a', behavior: 'pinned' });
      expect(await buildOf(client, started.number!)).toEqual({ buildId: 'a', behavior: 'pinned' });
      expect(await buildOf(client, started.upgrade!)).toEqual({ buildId: 'a', behavior: 'autoUpgrade' });
      for (const workflowId of Object.values(started)) {
        await approveHold(client, workflowId);
        expect((await client.getHandle(workflowId).result()).text).toBe('recorded');
      }
    });
  });

  it('lets no keelVersioning memo make a run on an unversioned worker declare a behavior (Temporal would refuse its every task)', async () => {
    const { dir, configPath, taskQueue } = writeTestConfig('unversioned', {
      ...buildFields('unused', 'a'),
      deployment: undefined,
    });
    track(spawnKeel(['worker', '--config', configPath], { env: { KEEL_TEST_DIR: dir } }));
    const client = await KeelClient.connect(loadConfig({ path: configPath }));
    try {
      const input = JSON.stringify({ agent: 'keeper', messages: [{ role: 'user', content: [{ text: 'record it' }] }] });
      const workflowId = `unversioned-${randomUUID().slice(0, 8)}`;
      const args = ['workflow', 'start', '--type', 'generateWorkflow', '--task-queue', taskQueue!, '--workflow-id', workflowId, '--input', input];
      const sent = await temporalCli([...args, '--memo', 'keelVersioning="autoUpgrade"']);
      expect(sent.code, sent.stderr).toBe(0);
      await approveHold(client, workflowId);
      expect((await client.getHandle(workflowId).result()).text).toBe('recorded');
      expect(await buildOf(client, workflowId)).toEqual({ buildId: undefined, behavior: 'unspecified' });
    } finally {
      await client.close();
    }
  });
});
