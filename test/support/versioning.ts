/**
 * Two builds of one Worker Deployment side by side, for the Worker Versioning tests on the dev
 * server (test/worker-versioning.test.ts) and on the cluster lane (test/cluster/): the agents
 * both builds run, and the scenarios that hold on either server. Which build ran what is read
 * from Temporal (each run's versioning info) and from the pids of the workers that completed
 * the tool calls, which each build's workers also log to their own directory.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { KeelClient } from '../../src/client/keel-client';
import { loadConfig } from '../../src/config/load';
import { ROOT, spawnKeel, type KeelProcess } from './processes';

/** A build's name in these tests. */
export type BuildId = 'a' | 'b';

/** Where two builds run: a client, and how to start a build's worker and make a build current. */
export interface TwoBuilds {
  client: KeelClient;
  /** Starts a worker of the build and waits until it polls as that build. */
  start: (buildId: BuildId) => Promise<KeelProcess>;
  /** Makes the build the deployment's current one. */
  makeCurrent: (buildId: BuildId) => Promise<void>;
  /** The directory the build's workers log their tool calls to ($KEEL_TEST_DIR). */
  dir: (buildId: BuildId) => string;
}

/**
 * The config of one build, beside its connection: agents `keeper` (pinned, the default) and
 * `follower` (autoUpgrade) holding record_fast for approval once, `long` twice, and `chat`, a
 * session agent doing the same per turn.
 */
export function buildFields(deploymentName: string, buildId: BuildId): Record<string, unknown> {
  return {
    server: { enabled: false },
    deployment: { name: deploymentName, buildId, agents: { follower: 'autoUpgrade' } },
    modules: [join(ROOT, 'test', 'fixtures', 'crash-agents.ts')],
    models: [
      { name: 'scripted/held', script: [{ toolRequests: [{ name: 'record_fast', input: {} }] }, { text: 'recorded' }] },
      { name: 'scripted/twice', script: [...Array(2).fill({ toolRequests: [{ name: 'record_fast', input: {} }] }), { text: 'recorded twice' }] },
    ],
    agents: [
      ...['keeper', 'follower', 'long'].map((name) => ({
        name,
        model: name === 'long' ? 'scripted/twice' : 'scripted/held',
        tools: ['record_fast'],
        use: [{ name: 'toolApproval' }],
      })),
      { name: 'chat', model: 'scripted/held', tools: ['record_fast'], use: [{ name: 'toolApproval' }], session: 'server' },
    ],
  };
}

/** What `withTwoBuilds` needs: each build's temporal.yaml and test directory, and how to reach the server. */
export interface TwoBuildsOptions {
  deploymentName: string;
  configs: Record<BuildId, { config: string; dir: string }>;
  /** Runs the temporal CLI with the connection (and namespace) added. */
  cli: (args: string[]) => Promise<{ code: number | null }>;
  /** Kills a started worker when the test ends (`killAfterEach`). */
  track: (worker: KeelProcess) => KeelProcess;
}

/** Runs `check` on builds a and b, with a client of build a's config, closed after. */
export async function withTwoBuilds({ deploymentName, configs, cli, track }: TwoBuildsOptions, check: (builds: TwoBuilds) => Promise<void>): Promise<void> {
  const client = await KeelClient.connect(loadConfig({ path: configs.a.config }));
  const builds: TwoBuilds = {
    client,
    async start(buildId) {
      const { config, dir } = configs[buildId];
      const worker = track(spawnKeel(['worker', '--config', config], { env: { KEEL_TEST_DIR: dir } }));
      await worker.waitFor(new RegExp(`keel: worker \\d+ on task queue .*build ${deploymentName}/${buildId}`));
      return worker;
    },
    async makeCurrent(buildId) {
      // Once its worker has polled: the server refuses a version it has not seen.
      const args = ['worker', 'deployment', 'set-current-version', '--deployment-name', deploymentName, '--build-id', buildId, '--yes'];
      await expect.poll(async () => (await cli(args)).code, { timeout: 30_000, interval: 500 }).toBe(0);
    },
    dir: (buildId) => configs[buildId].dir,
  };
  try {
    await check(builds);
  } finally {
    await client.close();
  }
}

/** Temporal's VersioningBehavior enum values. */
const BEHAVIORS: Record<number, string> = { 0: 'unspecified', 1: 'pinned', 2: 'autoUpgrade' };

/** The build a run (its latest, or `runId`) is on, from Temporal's versioning info, and its behavior. */
export async function buildOf(client: KeelClient, workflowId: string, runId?: string): Promise<{ buildId?: string; behavior?: string }> {
  const info = (await client.temporal.workflow.getHandle(workflowId, runId).describe()).raw.workflowExecutionInfo?.versioningInfo;
  return { buildId: info?.deploymentVersion?.buildId ?? undefined, behavior: BEHAVIORS[info?.behavior ?? 0] };
}

/** The pid of the worker that completed the run's record_fast call. */
export async function toolRanOn(client: KeelClient, workflowId: string): Promise<string | undefined> {
  const events = (await client.temporal.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const scheduled = new Map(
    events.filter((event) => event.activityTaskScheduledEventAttributes).map((event) => [String(event.eventId), event.activityTaskScheduledEventAttributes!]),
  );
  const completed = events
    .map((event) => event.activityTaskCompletedEventAttributes)
    .find((done) => done && scheduled.get(String(done.scheduledEventId))?.activityType?.name === 'callTool');
  return completed?.identity?.split('@')[0];
}

/** Approves the run's pending hold, once it has one. */
export async function approveHold(client: KeelClient, runId: string): Promise<void> {
  const handle = client.getHandle(runId);
  let id: string | undefined;
  await expect.poll(async () => (id = (await handle.pendingHolds())[0]?.id), { timeout: 30_000, interval: 300 }).toBeDefined();
  await handle.decide({ interruptId: id!, approved: true });
}

/** The record_fast calls a build's workers ran: pid and idempotency key of each, in order. */
export function callsRanBy(builds: TwoBuilds, buildId: BuildId): { pid: string; key: string }[] {
  const log = join(builds.dir(buildId), 'fast.log');
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const [pid = '', key = ''] = line.split(' ');
      return { pid, key };
    });
}

/**
 * A session moves at its next turn: a turn held while b becomes current finishes on a, the
 * next turn starts on b (pinned there), and the session itself is on b.
 */
export async function sessionMovesAtItsNextTurn(builds: TwoBuilds, sessionId: string): Promise<void> {
  const { client } = builds;
  const workerA = await builds.start('a');
  await builds.makeCurrent('a');
  const session = client.session('chat', sessionId);
  const first = await session.send('record it', { detach: true });
  await expect.poll(async () => (await client.getHandle(first.runId).pendingHolds()).length, { timeout: 30_000 }).toBe(1);
  expect(await buildOf(client, first.runId)).toEqual({ buildId: 'a', behavior: 'pinned' });

  // Build b becomes current while the first turn waits for its approval.
  const workerB = await builds.start('b');
  await builds.makeCurrent('b');
  await approveHold(client, first.runId);
  expect(await session.waitForSnapshot(first.snapshotId)).toMatchObject({ status: 'completed' });

  const second = await session.send('record it again', { detach: true });
  await approveHold(client, second.runId);
  expect(await session.waitForSnapshot(second.snapshotId)).toMatchObject({ status: 'completed' });

  expect(await buildOf(client, first.runId)).toEqual({ buildId: 'a', behavior: 'pinned' });
  expect(await toolRanOn(client, first.runId)).toBe(String(workerA.child.pid));
  expect(await buildOf(client, second.runId)).toEqual({ buildId: 'b', behavior: 'pinned' });
  expect(await toolRanOn(client, second.runId)).toBe(String(workerB.child.pid));
  expect(await buildOf(client, session.workflowId)).toEqual({ buildId: 'b', behavior: 'autoUpgrade' });
  expect((await session.snapshot()).messageCount).toBe(8);
}

/**
 * A pinned long run continues as new after b becomes current: on a server with upgrade on
 * continue-as-new (`moves`: Temporal 1.31 and later, where checked) the next run starts on b, else it stays
 * on a. Either way each approved call ran once, the first on a.
 */
export async function longRunAtContinueAsNew(builds: TwoBuilds, { moves }: { moves: boolean }): Promise<void> {
  const { client } = builds;
  const workerA = await builds.start('a');
  await builds.makeCurrent('a');
  const run = await client.start('long', 'record it twice', { continueAsNewAt: { historyEvents: 20 } });
  await expect.poll(async () => (await run.pendingHolds()).length, { timeout: 30_000 }).toBe(1);
  const workerB = await builds.start('b');
  await builds.makeCurrent('b');
  // Approving runs the first call on a; the next turn starts past 20 events, so the run continues as new.
  await approveHold(client, run.runId);
  await approveHold(client, run.runId);
  expect((await run.result()).text).toBe('recorded twice');

  const runs: { runId: string; status: string; started: number }[] = [];
  for await (const execution of client.temporal.workflow.list({ query: `WorkflowId = "${run.runId}"` }))
    runs.push({ runId: execution.runId, status: execution.status.name, started: execution.startTime.getTime() });
  runs.sort((x, y) => x.started - y.started);
  expect(runs.length).toBeGreaterThan(1);
  expect(runs.slice(0, -1).map((one) => one.status)).toEqual(runs.slice(0, -1).map(() => 'CONTINUED_AS_NEW'));
  const builtBy: (string | undefined)[] = [];
  for (const { runId } of runs) builtBy.push((await buildOf(client, run.runId, runId)).buildId);

  const onA = callsRanBy(builds, 'a');
  const onB = callsRanBy(builds, 'b');
  expect(new Set([...onA, ...onB].map((call) => call.key)).size).toBe(2);
  const pidA = String(workerA.child.pid);
  const pidB = String(workerB.child.pid);
  if (moves) {
    expect(builtBy).toEqual(['a', ...runs.slice(1).map(() => 'b')]);
    expect(onA.map((call) => call.pid)).toEqual([pidA]);
    expect(onB.map((call) => call.pid)).toEqual([pidB]);
  } else {
    expect(builtBy).toEqual(runs.map(() => 'a'));
    expect(onA.map((call) => call.pid)).toEqual([pidA, pidA]);
    expect(onB).toEqual([]);
  }
}
