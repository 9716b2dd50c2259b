/**
 * keel on a production-shaped Temporal (docs/production.md, "A production-shaped Temporal"): the Temporal
 * server binary on PostgreSQL, every keel process and the operator's CLI connected with mTLS.
 * `keel namespace setup` registers the namespace and keel's search attributes, idempotently,
 * and names what is wrong when it cannot; then the orchestrator's used-by runs through a worker
 * SIGKILLed and a restart of the server processes, and every call completes once. Worker
 * Versioning on it: a long run moves to the current build at continue-as-new, a session at its
 * next turn.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { startCluster, type Cluster } from '../support/cluster';
import { ROOT, killAfterEach, runKeel, spawnCommand, spawnKeel } from '../support/processes';
import { buildFields, longRunAtContinueAsNew, sessionMovesAtItsNextTurn, withTwoBuilds, type BuildId, type TwoBuilds } from '../support/versioning';

const track = killAfterEach(afterEach);
let cluster: Cluster;
const runDirs: string[] = [];

beforeAll(async () => {
  cluster = await startCluster({ binaries: inject('serverBinaries') });
});
afterAll(async () => {
  await cluster?.stop();
  for (const dir of runDirs) rmSync(dir, { recursive: true, force: true });
});

/** Writes a temporal.yaml in a new temp dir for keel processes on the cluster, with its mTLS settings unless `tls` replaces them. */
function writeClusterConfig(namespace: string, fields: Record<string, unknown> = {}, tls: unknown = cluster.tls): { dir: string; config: string } {
  const dir = mkdtempSync(join(tmpdir(), 'keel-cluster-run-'));
  runDirs.push(dir);
  const config = join(dir, 'temporal.yaml');
  writeFileSync(config, stringify({ temporal: { address: cluster.address, namespace, tls }, server: { enabled: false }, ...fields }));
  return { dir, config };
}

/** `temporal <args>` against the cluster as its operator, over mTLS. */
async function temporalCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { tls } = cluster;
  const cli = spawnCommand(inject('temporalBinary'), [
    ...args,
    '--address',
    cluster.address,
    '--tls-ca-path',
    tls.serverRootCaCertPath,
    '--tls-cert-path',
    tls.clientCertPath,
    '--tls-key-path',
    tls.clientKeyPath,
    '--tls-server-name',
    tls.serverName,
  ]);
  const code = await cli.exited;
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

async function keelJson<T>(args: string[], config: string, env: Record<string, string> = {}): Promise<T> {
  const { stdout, stderr, code } = await runKeel([...args, '--json', '--config', config], { env });
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as T;
}

describe('keel namespace setup', () => {
  it('registers the namespace and keel’s search attributes over mTLS; run again, it says they exist', async () => {
    const { config } = writeClusterConfig('keel-setup');
    const first = await keelJson<{ namespace: unknown; searchAttributes: unknown }>(['namespace', 'setup', '--retention', '2 days'], config);
    expect(first).toEqual({
      address: cluster.address,
      namespace: { name: 'keel-setup', created: true, retention: '2 days' },
      searchAttributes: [
        { name: 'KeelAgent', type: 'Keyword', created: true },
        { name: 'KeelStatus', type: 'Keyword', created: true },
        { name: 'KeelForkOf', type: 'Keyword', created: true },
        { name: 'KeelTenant', type: 'Keyword', created: true },
        { name: 'KeelOwner', type: 'Keyword', created: true },
      ],
    });
    // The operator's own client sees them.
    const described = await temporalCli(['operator', 'namespace', 'describe', '--namespace', 'keel-setup', '--output', 'json']);
    expect(described.code, described.stderr).toBe(0);
    expect((JSON.parse(described.stdout) as { config: { workflowExecutionRetentionTtl: string } }).config.workflowExecutionRetentionTtl).toBe('172800s');
    const listed = await temporalCli(['operator', 'search-attribute', 'list', '--namespace', 'keel-setup', '--output', 'json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/"KeelAgent":\s*"INDEXED_VALUE_TYPE_KEYWORD"/);
    expect(listed.stdout).toMatch(/"KeelStatus":\s*"INDEXED_VALUE_TYPE_KEYWORD"/);
    expect(listed.stdout).toMatch(/"KeelForkOf":\s*"INDEXED_VALUE_TYPE_KEYWORD"/);
    expect(listed.stdout).toMatch(/"KeelTenant":\s*"INDEXED_VALUE_TYPE_KEYWORD"/);
    expect(listed.stdout).toMatch(/"KeelOwner":\s*"INDEXED_VALUE_TYPE_KEYWORD"/);

    const again = await runKeel(['namespace', 'setup', '--retention', '5 days', '--config', config]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.trim().split('\n')).toEqual([
      `keel namespace setup: namespace "keel-setup" at ${cluster.address}: already registered, retention 2 days (kept: --retention 5 days applies to a namespace this command registers; to change it: temporal operator namespace update --namespace keel-setup --retention <duration>)`,
      'keel namespace setup: search attribute KeelAgent (Keyword): already registered',
      'keel namespace setup: search attribute KeelStatus (Keyword): already registered',
      'keel namespace setup: search attribute KeelForkOf (Keyword): already registered',
      'keel namespace setup: search attribute KeelTenant (Keyword): already registered',
      'keel namespace setup: search attribute KeelOwner (Keyword): already registered',
    ]);
  });

  it('refuses a namespace where one of keel’s search attributes has another type, naming it, and registers nothing', async () => {
    // The namespace is registered through the operator's CLI, with KeelStatus as Text.
    const created = await temporalCli(['operator', 'namespace', 'create', '--namespace', 'keel-clash', '--retention', '24h']);
    expect(created.code, created.stderr).toBe(0);
    await expect
      .poll(
        async () => (await temporalCli(['operator', 'search-attribute', 'create', '--namespace', 'keel-clash', '--name', 'KeelStatus', '--type', 'Text'])).code,
        {
          timeout: 30_000,
          interval: 500,
        },
      )
      .toBe(0);
    const { config } = writeClusterConfig('keel-clash');
    const refused = await runKeel(['namespace', 'setup', '--config', config]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`FAILED_PRECONDITION: namespace "keel-clash" at ${cluster.address} has KeelStatus as Text; keel needs it as Keyword`);
    const listed = await temporalCli(['operator', 'search-attribute', 'list', '--namespace', 'keel-clash', '--output', 'json']);
    expect(listed.stdout).not.toContain('KeelAgent');
  });

  it('names what is wrong: nothing at the address, a TLS file missing, TLS off, no client certificate, one the server does not trust', async () => {
    const { certificates, tls } = cluster;
    const cases: Array<{ what: string; address?: string; tls: unknown; code: number; says: string }> = [
      {
        what: 'nothing at the address',
        address: '127.0.0.1:1',
        tls,
        code: 1,
        says: 'UNAVAILABLE: cannot reach Temporal at 127.0.0.1:1: nothing accepts connections there',
      },
      {
        what: 'a TLS file missing',
        tls: { ...tls, clientKeyPath: '/nonexistent/client.key' },
        code: 2,
        says: 'temporal.tls.clientKeyPath: cannot read /nonexistent/client.key: ENOENT',
      },
      { what: 'TLS off', tls: false, code: 2, says: `${cluster.address} speaks TLS, but temporal.tls is off` },
      {
        what: 'no client certificate',
        tls: { serverName: tls.serverName, serverRootCaCertPath: tls.serverRootCaCertPath },
        code: 1,
        says: `the server at ${cluster.address} requires a client certificate (mTLS): give temporal.tls.clientCertPath and clientKeyPath`,
      },
      {
        what: 'a client certificate of another CA',
        tls: { ...tls, clientCertPath: certificates.strangerCert, clientKeyPath: certificates.strangerKey },
        code: 1,
        says: `the server at ${cluster.address} refused the client certificate temporal.tls.clientCertPath (${certificates.strangerCert})`,
      },
      {
        what: 'a server certificate the CA did not sign',
        tls: { ...tls, serverRootCaCertPath: certificates.strangerCert },
        code: 1,
        says: `it is not signed by temporal.tls.serverRootCaCertPath (${certificates.strangerCert})`,
      },
    ];
    for (const { what, address, tls: given, code, says } of cases) {
      const { config } = writeClusterConfig('keel-refused', {}, given);
      if (address) writeFileSync(config, readFileSync(config, 'utf8').replace(cluster.address, address));
      const refused = await runKeel(['namespace', 'setup', '--config', config]);
      expect({ what, code: refused.code }).toEqual({ what, code });
      expect(refused.stderr, what).toContain(says);
    }
    // None of them registered anything.
    const described = await temporalCli(['operator', 'namespace', 'describe', '--namespace', 'keel-refused']);
    expect(described.code).not.toBe(0);
  });
});

type Status = { status: string; text?: string; interrupts: Array<{ id: string; kind: string; toolName: string }> };
type Tasks = { tasks: Array<{ taskId: string; agent: string; status: string; result?: string }> };
type Event = {
  eventId: string;
  eventType?: string;
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string } };
  activityTaskCompletedEventAttributes?: { scheduledEventId?: string };
};

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

describe('the orchestrator on a production-shaped Temporal', () => {
  it('runs a background sub-agent and a nested approval through a SIGKILLed worker and a server restart: all complete, no completed tool call repeats', async () => {
    // conductor turn 1: hive in the background (gated_work, held at its gate) and guard (record_fast, held for approval);
    // the worker running gated_work is SIGKILLed; Temporal and PostgreSQL restart; a second client approves;
    // the gate opens once gated_work runs on the surviving worker; turn 2: wait for the hive; turn 3: the answer.
    const namespace = 'keel-lane';
    const { dir, config } = writeClusterConfig(namespace, {
      taskQueue: `cluster-${randomUUID()}`,
      modules: [join(ROOT, 'test', 'fixtures', 'cluster-agents.ts')],
      worker: { stickyQueueScheduleToStartTimeout: '1 second' },
      activities: { tool: { heartbeatTimeout: '3 seconds', retry: { initialInterval: '200ms' } } },
    });
    // Workers on several machines share the signing key through the environment, not a file.
    const env = { KEEL_TEST_DIR: dir, KEEL_SIGNING_KEY: randomUUID() };
    const setUp = await runKeel(['namespace', 'setup', '--config', config]);
    expect(setUp.code, setUp.stderr).toBe(0);

    const workers = [track(spawnKeel(['worker', '--config', config], { env })), track(spawnKeel(['worker', '--config', config], { env }))];
    await Promise.all(workers.map((worker) => worker.waitFor(/keel: worker \d+ on task queue/)));
    // The client that starts the run watches it to the end, through the restart.
    const runId = `conductor-${randomUUID()}`;
    const starter = track(spawnKeel(['run', 'conductor', 'go', '--id', runId, '--json', '--config', config], { env }));

    let status: Status | undefined;
    await expect
      .poll(async () => (status = await keelJson<Status>(['status', runId], config, env)).interrupts.length, { timeout: 60_000, interval: 500 })
      .toBe(1);
    expect(status!.status).toBe('waiting');
    expect(status!.interrupts[0]).toMatchObject({ id: 'guard-2/i1', kind: 'approval', toolName: 'record_fast' });
    const taskId = `hive:${runId}/hive-1`;
    expect(await keelJson<Tasks>(['tasks', runId], config, env)).toEqual({ tasks: [{ taskId, agent: 'hive', status: 'pending' }] });

    // SIGKILL the worker running gated_work, then restart the server processes.
    const gateLog = join(dir, 'gate.log');
    await expect.poll(() => lines(gateLog).length, { timeout: 60_000, interval: 100 }).toBeGreaterThan(0);
    const victimPid = Number(lines(gateLog)[0]!.split(' ')[1]);
    const victim = workers.find((worker) => worker.child.pid === victimPid);
    const survivor = workers.find((worker) => worker !== victim)!;
    expect(victim, `gated_work ran in pid ${victimPid}, not one of the workers`).toBeDefined();
    victim!.kill('SIGKILL');
    await victim!.exited;
    const serverPid = cluster.server.pid();
    await cluster.restart();
    expect(cluster.server.pid()).not.toBe(serverPid);

    // The surviving worker serves the queue again once it answers the run's status query.
    await expect
      .poll(async () => (await keelJson<Status & { workerAnswered?: boolean }>(['status', runId], config, env)).workerAnswered, {
        timeout: 60_000,
        interval: 500,
      })
      .not.toBe(false);
    // A second client process decides the sub-agent's hold at the root.
    const approved = await runKeel(['approve', runId, 'guard-2/i1', '--config', config], { env });
    expect(approved.code, approved.stderr).toBe(0);
    const fastLog = join(dir, 'fast.log');
    await expect.poll(() => lines(fastLog).length, { timeout: 60_000, interval: 200 }).toBe(1);

    // The gate opens once exactly one attempt of gated_work runs, on the surviving worker (an attempt Temporal
    // gave up on during the restart is cancelled, and logs so).
    const live = () => {
      const entries = lines(gateLog).map((line) => line.split(' '));
      const aborted = entries.filter(([what]) => what === 'aborted').map(([, pid, attempt]) => `${pid} ${attempt}`);
      return entries.filter(([what, pid, attempt]) => what === 'start' && pid !== String(victimPid) && !aborted.includes(`${pid} ${attempt}`));
    };
    await expect.poll(() => live().length, { timeout: 60_000, interval: 200 }).toBe(1);
    expect(live()[0]![1]).toBe(String(survivor.child.pid));
    writeFileSync(join(dir, 'gate'), '');

    const code = await starter.exited;
    expect(code, starter.stderr()).toBe(0);
    const result = JSON.parse(starter.stdout()) as { runId: string; status: string; text: string };
    expect(result).toMatchObject({ runId, status: 'completed', text: 'hive: completed hive done; guard: guard done' });
    expect(await keelJson<Tasks>(['tasks', runId], config, env)).toEqual({ tasks: [{ taskId, agent: 'hive', status: 'completed', result: 'hive done' }] });

    // No completed tool call repeats: each tool's effect happened once, by the worker that completed it,
    // and Temporal scheduled each call once (a retry is an attempt of that one activity, never a new one).
    expect(lines(fastLog)).toHaveLength(1);
    const ends = lines(gateLog).filter((line) => line.startsWith('end '));
    expect(ends).toHaveLength(1);
    expect(ends[0]!.split(' ')[1]).toBe(String(survivor.child.pid));
    for (const workflowId of [`${runId}/hive-1`, `${runId}/guard-2`]) {
      const shown = await temporalCli(['workflow', 'show', '--namespace', namespace, '--workflow-id', workflowId, '--output', 'json']);
      expect(shown.code, shown.stderr).toBe(0);
      const events = (JSON.parse(shown.stdout) as { events: Event[] }).events;
      const calls = events.filter(
        (event) => event.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' && event.activityTaskScheduledEventAttributes?.activityType?.name === 'callTool',
      );
      expect(calls, `the tool calls of ${workflowId}`).toHaveLength(1);
      const completions = events.filter((event) => event.activityTaskCompletedEventAttributes?.scheduledEventId === calls[0]!.eventId);
      expect(completions, `the completions of ${workflowId}'s tool call`).toHaveLength(1);
    }
    // Runs are listed by agent and state through keel's search attributes, in PostgreSQL's visibility store.
    const listed = await temporalCli([
      'workflow',
      'list',
      '--namespace',
      namespace,
      '--query',
      `KeelAgent='conductor' AND KeelStatus='completed'`,
      '--output',
      'json',
    ]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(runId);
  });
});

describe('Worker Versioning on a production-shaped Temporal', () => {
  const namespace = 'keel-versioning';
  let namespaceReady: Promise<void> | undefined;

  /** Runs `check` on builds a and b of a new deployment in the namespace, on a new task queue. */
  async function withNewBuilds(label: string, check: (builds: TwoBuilds) => Promise<void>): Promise<void> {
    const taskQueue = `versioning-${label}-${randomUUID()}`;
    const deploymentName = `keel-cluster-${randomUUID().slice(0, 8)}`;
    const build = (buildId: BuildId) => writeClusterConfig(namespace, { taskQueue, ...buildFields(deploymentName, buildId) });
    const configs = { a: build('a'), b: build('b') };
    namespaceReady ??= runKeel(['namespace', 'setup', '--config', configs.a.config]).then(({ code, stderr }) => expect(code, stderr).toBe(0));
    await namespaceReady;
    const cli = (args: string[]) => temporalCli([...args, '--namespace', namespace]);
    await withTwoBuilds({ deploymentName, configs, cli, track }, check);
  }

  it('moves a pinned long run to the current build when it continues as new (upgrade on continue-as-new)', async () => {
    await withNewBuilds('long', (builds) => longRunAtContinueAsNew(builds, { moves: true }));
  });

  it('moves a session to the current build at its next turn', async () => {
    await withNewBuilds('session', (builds) => sessionMovesAtItsNextTurn(builds, `cluster-${randomUUID().slice(0, 8)}`));
  });
});
