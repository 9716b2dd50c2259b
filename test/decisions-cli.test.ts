/**
 * Decisions reach their hold, or say why not, with real processes: `keel approve` when no
 * worker polls (refused, or queued with --queue) and when the worker that polls does not answer
 * (a bounded wait, then the decision is applied once a worker runs the run); `keel status`
 * without a worker says what Temporal recorded; a hold raised in a background task after its
 * launching run ended stays findable (`keel tasks`, `keel holds`) and decidable, from the task's
 * own run or from a later run of the same conversation.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { temporal } from '@temporalio/proto';
import { ROOT, killAfterEach, runKeel, spawnKeel, writeTestConfig, type KeelProcess } from './support/processes';

const track = killAfterEach(afterEach);

const { dir, configPath: config } = writeTestConfig('decisions', {
  server: { enabled: false },
  modules: [join(ROOT, 'test', 'fixtures', 'guard-agents.ts')],
});
const env = { KEEL_TEST_DIR: dir };
let client: KeelClient;
beforeAll(async () => {
  client = await KeelClient.connect(loadConfig({ path: config }));
});
afterAll(async () => {
  await client?.close();
});

const dangerRuns = (): string[] =>
  existsSync(join(dir, 'danger.log')) ? readFileSync(join(dir, 'danger.log'), 'utf8').trim().split('\n').filter(Boolean) : [];

async function keelJson<T>(args: string[], configPath = config): Promise<T> {
  const { stdout, stderr, code } = await runKeel([...args, '--json', '--config', configPath]);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as T;
}

type Hold = { id: string; kind: string; toolName?: string; path?: string[]; approve: string; deny: string };
type Status = {
  status: string;
  workerAnswered?: boolean;
  interrupts: Array<{ id: string; kind: string; toolName?: string; path?: string[] }>;
  refusedSignals?: Array<{ signal: string; reason: string }>;
};

const READY = /keel: worker \d+ on task queue/;

/** A worker on `configPath`'s queue, killed after the test. */
async function startWorker(configPath: string) {
  const worker = track(spawnKeel(['worker', '--config', configPath], { env }));
  await worker.waitFor(READY);
  return worker;
}

let shared: KeelProcess | undefined;
/**
 * The worker on `config`'s queue, which the tests share (a worker process costs seconds of
 * CPU to start): started when there is none, or again when a test killed it.
 */
async function sharedWorker(): Promise<KeelProcess> {
  if (!shared || shared.child.exitCode !== null || shared.child.signalCode !== null) {
    shared = spawnKeel(['worker', '--config', config], { env });
    await shared.waitFor(READY);
  }
  return shared;
}
afterAll(async () => {
  shared?.kill('SIGKILL');
  await shared?.exited;
});

/**
 * Waits until `keel status` shows hold i1: the wait asks the run through the client (a `keel`
 * process per poll would cost a CPU second each), then `keel status` is asked once.
 */
async function waitForHold(runId: string, configPath = config): Promise<void> {
  await expect.poll(async () => (await client.getHandle(runId).pendingHolds()).map((hold) => hold.id), { timeout: 30_000, interval: 250 }).toEqual(['i1']);
  expect((await keelJson<Status>(['status', runId], configPath)).interrupts.map((hold) => hold.id)).toEqual(['i1']);
}

/** What both the client's status and `keel status --json` say about a run's holds and refused signals. */
type Holds = { interrupts: Array<{ id: string }>; refusedSignals?: Array<{ signal: string; reason: string }> };

/** Waits, asking through the client, until `read` of the run's status gives `expected`; then `keel status --json` must say the same. */
async function waitForStatus<T>(runId: string, read: (status: Holds) => T, expected: T, configPath = config): Promise<void> {
  await expect.poll(async () => read(await client.getHandle(runId).status()), { timeout: 30_000, interval: 250 }).toEqual(expected);
  expect(read(await keelJson<Status>(['status', runId], configPath))).toEqual(expected);
}

describe('keel approve and keel status without a worker', () => {
  it('refuses at once when no worker polls, queues with --queue, and status says no worker answered', async () => {
    // A task queue no worker has polled: the run waits for its first workflow task.
    const { configPath: idle } = writeTestConfig('decisions-idle', {
      server: { enabled: false },
      modules: [join(ROOT, 'test', 'fixtures', 'guard-agents.ts')],
    });
    const { runId } = await keelJson<{ runId: string }>(['run', 'guarded', 'go', '--detach'], idle);
    const started = Date.now();
    const refused = await runKeel(['approve', runId, 'i1', '--config', idle]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'so nothing would take the decision now; it was not sent. Start a worker (npx keel worker), or send it anyway with --queue',
    );
    expect(Date.now() - started).toBeLessThan(10_000);

    const status = await runKeel(['status', runId, '--json', '--config', idle]);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ status: 'running', workerAnswered: false, interrupts: [] });
    expect(status.stderr).toContain("no worker answered the run's status query; showing what the run last recorded in Temporal");

    const queued = await keelJson<{ queued: boolean }>(['deny', runId, 'i1', '--queue'], idle);
    expect(queued).toMatchObject({ queued: true, approved: false });
    const history = await client.temporal.workflow.getHandle(runId).fetchHistory();
    expect(
      history.events?.some(
        (event) =>
          event.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED &&
          event.workflowExecutionSignaledEventAttributes?.signalName === 'resume',
      ),
    ).toBe(true);

    // A worker starts: the queued decision is taken (here refused, visibly: it came before the hold it names existed).
    await startWorker(idle);
    await waitForStatus(runId, (status) => status.refusedSignals ?? [], [{ signal: 'resume', reason: 'unknown hold id "i1"; pending holds: (none)' }], idle);
    await waitForHold(runId, idle);
    await client.getHandle(runId).cancel();
  });

  it('keel decide refuses a decision the hold does not take, naming the field and what it takes; the tool does not run', async () => {
    await sharedWorker();
    const { runId } = await keelJson<{ runId: string }>(['run', 'guarded', 'go', '--detach']);
    await waitForHold(runId);
    for (const mistyped of ['{"happened": false}', '{"aproved": true}']) {
      const refused = await runKeel(['decide', runId, 'i1', mistyped, '--config', config]);
      expect(refused.code, mistyped).toBe(1);
      expect(refused.stderr).toContain('approved: expected boolean, received undefined; the hold takes { approved: boolean, reason?: string }');
    }
    // By signal (--queue) too: refused visibly, the hold stays.
    expect((await runKeel(['decide', runId, 'i1', '{"happened": false}', '--queue', '--config', config])).code).toBe(0);
    await waitForStatus(runId, (status) => status.refusedSignals?.map((refusal) => refusal.reason) ?? [], [
      expect.stringContaining('the hold takes { approved: boolean, reason?: string }'),
    ]);
    expect((await keelJson<Status>(['status', runId])).interrupts.map((hold) => hold.id)).toEqual(['i1']);
    expect(dangerRuns().filter((line) => line.includes(runId))).toEqual([]);
    expect((await runKeel(['decide', runId, 'i1', '{"approved": true}', '--config', config])).code).toBe(0);
    await client.getHandle(runId).result();
    expect(dangerRuns().filter((line) => line.includes(runId))).toHaveLength(1);
  });

  it('takes 20 decisions sent at once while no worker runs the run, each once, once a worker is back', async () => {
    // The run holds 20 calls; its worker is killed; 20 approvals arrive together, past Temporal's 10 updates in flight for
    // one run (the rest are refused RESOURCE_EXHAUSTED and sent again with the same update id); a worker comes back.
    const { configPath: many } = writeTestConfig('decisions-many', {
      server: { enabled: false },
      modules: [join(ROOT, 'test', 'fixtures', 'many-holds-agents.ts')],
    });
    const worker = await startWorker(many);
    const manyClient = await KeelClient.connect(loadConfig({ path: many }));
    try {
      const handle = await manyClient.start('many-holds', 'go');
      await expect.poll(async () => (await handle.pendingHolds()).length, { timeout: 30_000, interval: 250 }).toBe(20);
      const held = await handle.pendingHolds();
      worker.kill('SIGKILL');
      await worker.exited;
      const decided = Promise.allSettled(held.map((hold) => handle.approve(hold.id)));
      await new Promise((resolve) => setTimeout(resolve, 3000));
      await startWorker(many);
      const outcomes = await decided;
      expect(outcomes.filter((outcome) => outcome.status === 'rejected').map((outcome) => String(outcome.reason))).toEqual([]);
      expect((await handle.result()).text).toBe('done');
      expect((await handle.status()).decisions).toHaveLength(20);
      expect(dangerRuns().filter((line) => line.includes(handle.runId))).toHaveLength(20);
    } finally {
      await manyClient.close();
    }
  });

  it('waits 15 s for a worker that does not answer, says the decision stays pending, and a new worker applies it', async () => {
    const worker = await sharedWorker();
    const handle = await client.start('guarded', 'go');
    await waitForHold(handle.runId);
    // Stopped, not killed: Temporal lists it as a poller and its process is alive on this host, but it answers nothing.
    worker.kill('SIGSTOP');

    // Status says no worker answered, from what the run recorded.
    const status = await keelJson<Status>(['status', handle.runId]);
    expect(status).toMatchObject({ status: 'waiting', workerAnswered: false, interrupts: [{ id: 'i1', kind: 'approval', toolName: 'danger' }] });

    const started = Date.now();
    const approve = await runKeel(['approve', handle.runId, 'i1', '--config', config]);
    const waited = Date.now() - started;
    expect(approve.code).toBe(1);
    expect(approve.stderr).toContain('no worker took the decision within 15 s');
    expect(approve.stderr).toContain('The server keeps the decision for the run');
    expect(waited).toBeGreaterThanOrEqual(14_000);
    expect(waited).toBeLessThan(40_000);
    expect(dangerRuns().filter((line) => line.includes(handle.runId))).toEqual([]);

    worker.kill('SIGKILL');
    await worker.exited;
    await sharedWorker();
    expect((await handle.result()).text).toBe('done');
    expect(dangerRuns().filter((line) => line.includes(handle.runId))).toHaveLength(1);
  });
});

describe('a hold raised in a background task after its launching run ended', () => {
  it('is listed by keel tasks and keel holds, decidable on the task, and followed by a later run of the conversation', async () => {
    // run 1: delegator hands guarded a task in the background and ends; the task's danger call waits for approval.
    // run 2 of the same conversation: collect waits for the task; the task's hold shows in run 2 and is approved there.
    await sharedWorker();
    const launching = await client.start('delegator', 'launch');
    const rootId = launching.runId;
    const first = await launching.result();
    expect(first.text).toBe('launched');
    const [taskId] = first.tasks;
    const taskRunId = taskId!.slice('guarded:'.length);

    type Tasks = { tasks: Array<{ taskId: string; status: string; interrupts?: Hold[] }> };
    await expect.poll(async () => (await client.getHandle(rootId).tasks())[0]?.status, { timeout: 30_000, interval: 300 }).toBe('waiting');
    const listed = (await keelJson<Tasks>(['tasks', rootId])).tasks[0]!;
    expect(listed).toMatchObject({
      taskId,
      status: 'waiting',
      interrupts: [{ id: 'i1', kind: 'approval', toolName: 'danger', approve: `npx keel approve ${taskRunId} i1` }],
    });

    const { holds } = await keelJson<{ holds: Array<Hold & { runId: string }> }>(['holds']);
    expect(holds.filter((hold) => hold.runId === taskRunId)).toEqual([
      expect.objectContaining({ runId: taskRunId, id: 'i1', toolName: 'danger', approve: `npx keel approve ${taskRunId} i1` }),
    ]);

    // The launching run has ended: a decision sent there says where the hold is.
    const viaRoot = await runKeel(['approve', rootId, 'guarded-1/i1', '--config', config]);
    expect(viaRoot.code).toBe(1);
    expect(viaRoot.stderr).toContain(
      `has ended (completed); it takes no more decisions; hold guarded-1/i1 is in run "${taskRunId}", which goes on: decide it there (npx keel approve ${taskRunId} i1)`,
    );

    // A later run of the conversation follows the task: its status shows the hold, and the decision sent there reaches it.
    const second = await client.start('delegator', [...first.messages, { role: 'user', content: [{ text: 'collect' }] }]);
    await expect.poll(async () => (await second.pendingHolds()).length, { timeout: 30_000, interval: 300 }).toBe(1);
    const shown = await keelJson<Status>(['status', second.runId]);
    expect(shown.interrupts).toHaveLength(1);
    const hold = shown.interrupts[0]!;
    expect(hold).toMatchObject({ kind: 'approval', toolName: 'danger', path: [taskRunId] });
    expect(hold.id).toMatch(/^guarded-\d+\/i1$/);
    // Listed once, at the run that shows it now.
    const again = (await keelJson<{ holds: Array<Hold & { runId: string }> }>(['holds'])).holds.filter(
      (entry) => entry.runId === taskRunId || entry.runId === second.runId,
    );
    expect(again).toEqual([expect.objectContaining({ runId: second.runId, id: hold.id })]);

    const approved = await runKeel(['approve', second.runId, hold.id, '--config', config]);
    expect(approved.code, approved.stderr).toBe(0);
    expect((await second.result()).text).toBe('collected: completed done');
    expect(dangerRuns().filter((line) => line.includes(taskRunId))).toHaveLength(1);
  });

  it('is followed by the next turn of a session, where it is decided', async () => {
    // turn 1 of session s: hand guarded a task in the background, answer launched; the task waits for approval.
    // turn 2: collect; the turn's run follows the task, shows its hold, and the approval sent there reaches it.
    await sharedWorker();
    const session = `follow-${Date.now()}`;
    const first = await keelJson<{ text: string; tasks: string[] }>(['run', 'session-delegator', 'launch', '--session', session]);
    expect(first.text).toBe('launched');
    const taskRunId = first.tasks[0]!.slice('guarded:'.length);
    const turn = await keelJson<{ runId: string }>(['run', 'session-delegator', 'collect', '--session', session, '--detach']);
    const turnHandle = client.getHandle(turn.runId);
    await expect.poll(async () => (await turnHandle.pendingHolds()).length, { timeout: 30_000, interval: 300 }).toBe(1);
    const shown = await keelJson<Status>(['status', turn.runId]);
    expect(shown.interrupts).toHaveLength(1);
    expect(shown.interrupts[0]).toMatchObject({ kind: 'approval', toolName: 'danger', path: [taskRunId] });
    const approved = await runKeel(['approve', turn.runId, shown.interrupts[0]!.id, '--config', config]);
    expect(approved.code, approved.stderr).toBe(0);
    await turnHandle.result();
    expect((await keelJson<Status & { text?: string }>(['status', turn.runId])).text).toBe('collected: completed done');
    expect(dangerRuns().filter((line) => line.includes(taskRunId))).toHaveLength(1);
  });
});

describe('keel run --json on a run that waits', () => {
  it('says the run id and each hold with its decide commands on stderr at once; stdout keeps its one JSON object', async () => {
    await sharedWorker();
    const run = track(spawnKeel(['run', 'guarded', 'delete it', '--json', '--config', config], { env }));
    await run.waitFor(/waiting for a decision on i1/, 30_000);
    const runId = /run (\S+) started \(agent guarded\)/.exec(run.stderr())?.[1];
    expect(runId).toBeDefined();
    expect(run.stderr()).toContain(`approve: npx keel approve ${runId} i1`);
    expect(run.stderr()).toContain(`deny:    npx keel deny ${runId} i1 --reason "..."`);
    expect(run.stdout()).toBe('');
    const approved = await runKeel(['approve', runId!, 'i1', '--config', config]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(await run.exited).toBe(0);
    expect(JSON.parse(run.stdout())).toMatchObject({ runId, status: 'completed' });
  });
});
