/**
 * The orchestrator with real worker processes and the CLI: a background sub-agent that
 * outlives its parent, listed and aborted with `keel tasks` / `keel abort`; a sub-agent's
 * approval decided at the root with `keel approve`; a background task whose worker is
 * SIGKILLed completes on another worker, its tool's effect happening once, and the
 * orchestrator collects its result.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, killAfterEach, runKeel, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);

function setup(tool: Record<string, unknown> = {}) {
  const { dir, configPath: config } = writeTestConfig('orchestrator', {
    server: { enabled: false },
    modules: [join(ROOT, 'test', 'fixtures', 'orchestrator-agents.ts')],
    activities: { tool: { heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' }, ...tool } },
  });
  return { dir, config };
}

async function keelJson<T>(args: string[], config: string): Promise<T> {
  const { stdout, stderr, code } = await runKeel([...args, '--json', '--config', config]);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as T;
}

type Status = {
  status: string;
  text?: string;
  interrupts: Array<{ id: string; kind: string; toolName: string; path?: string[] }>;
  tasks: Array<{ taskId: string; agent: string; runId: string }>;
};
type Tasks = { tasks: Array<{ taskId: string; agent: string; status: string; result?: string }> };

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

describe('orchestrator through the CLI', () => {
  it('decides a sub-agent’s hold at the root, finishes while its background task runs, and lists and aborts the task', async () => {
    // dispatcher turn 1: bee in the background (300 s of work) and guard (held by its gate); the hold is
    // approved at the root; guard answers; turn 2: dispatched. The bee is still running: keel tasks, keel abort.
    const { dir, config } = setup();
    // The bee's work outlasts everything before the abort, however loaded the machine (30 s did not, once, in a full CI run).
    const worker = spawnKeel(['worker', '--config', config], { env: { KEEL_TEST_DIR: dir, KEEL_SLOW_SECONDS: '300' } });
    track(worker);
    await worker.waitFor(/keel: worker \d+ on task queue/);
    const { runId } = await keelJson<{ runId: string }>(['run', 'dispatcher', 'go', '--detach'], config);

    let status: Status | undefined;
    await expect.poll(async () => (status = await keelJson<Status>(['status', runId], config)).interrupts.length, { timeout: 30_000, interval: 300 }).toBe(1);
    expect(status!.status).toBe('waiting');
    expect(status!.interrupts[0]).toMatchObject({ id: 'guard-2/i1', kind: 'approval', toolName: 'record_fast', path: [`${runId}/guard-2`] });
    const taskId = `bee:${runId}/bee-1`;
    expect(status!.tasks).toEqual([{ taskId, agent: 'bee', runId: `${runId}/bee-1` }]);

    // A task id must name a task: not the root run under a made-up agent, nor a task under another agent's name.
    const root = await runKeel(['abort', `sub:${runId}`, '--config', config]);
    expect(root.code).toBe(1);
    expect(root.stderr).toContain(
      `task id "sub:${runId}" names run "${runId}", which is not a background task (no run started it); to cancel that run itself: keel abort ${runId}`,
    );
    const misnamed = await runKeel(['abort', `guard:${runId}/bee-1`, '--config', config]);
    expect(misnamed.code).toBe(1);
    expect(misnamed.stderr).toContain(`which is a task of agent "bee", not "guard"; its task id is ${taskId}`);
    expect((await keelJson<Status>(['status', runId], config)).status).toBe('waiting');

    const approved = await runKeel(['approve', runId, 'guard-2/i1', '--config', config]);
    expect(approved.code, approved.stderr).toBe(0);
    await expect.poll(async () => (await keelJson<Status>(['status', runId], config)).status, { timeout: 30_000, interval: 300 }).toBe('completed');
    expect((await keelJson<Status>(['status', runId], config)).text).toBe('dispatched');
    expect(lines(join(dir, 'fast.log'))).toHaveLength(1);

    expect(await keelJson<Tasks>(['tasks', runId], config)).toEqual({ tasks: [{ taskId, agent: 'bee', status: 'pending' }] });
    expect(await keelJson<{ taskId: string; status: string }>(['abort', taskId], config)).toEqual({ taskId, status: 'aborting' });
    await expect.poll(async () => (await keelJson<Tasks>(['tasks', runId], config)).tasks[0]?.status, { timeout: 30_000, interval: 300 }).toBe('aborted');
    expect(lines(join(dir, 'slow.log')).filter((line) => line.startsWith('end'))).toEqual([]);
  });

  it('finishes a background task whose worker is SIGKILLed on another worker, once, and the orchestrator collects it', async () => {
    // orchestrator turn 1: bee in the background (slow_work 4 s); turn 2: wait for it; the worker running
    // slow_work is killed; the call is retried on the other worker; turn 3: collected
    const { dir, config } = setup();
    const env = { KEEL_TEST_DIR: dir, KEEL_SLOW_SECONDS: '4' };
    const workers = [spawnKeel(['worker', '--config', config], { env }), spawnKeel(['worker', '--config', config], { env })];
    for (const worker of workers) track(worker);
    await Promise.all(workers.map((worker) => worker.waitFor(/keel: worker \d+ on task queue/)));
    const { runId } = await keelJson<{ runId: string }>(['run', 'orchestrator', 'go', '--detach'], config);

    const slowLog = join(dir, 'slow.log');
    await expect.poll(() => lines(slowLog).length, { timeout: 30_000, interval: 100 }).toBeGreaterThan(0);
    const pid = Number(lines(slowLog)[0]!.split(' ')[1]);
    const victim = workers.find((worker) => worker.child.pid === pid);
    expect(victim, `slow_work ran in pid ${pid}, not one of the workers`).toBeDefined();
    victim!.kill('SIGKILL');

    await expect.poll(async () => (await keelJson<Status>(['status', runId], config)).status, { timeout: 60_000, interval: 500 }).toBe('completed');
    expect((await keelJson<Status>(['status', runId], config)).text).toBe('collected: completed bee done');
    const ends = lines(slowLog).filter((line) => line.startsWith('end'));
    expect(ends).toHaveLength(1);
    expect(ends[0]!.split(' ')[1]).not.toBe(String(pid));
    expect(await keelJson<Tasks>(['tasks', runId], config)).toEqual({
      tasks: [{ taskId: `bee:${runId}/bee-1`, agent: 'bee', status: 'completed', result: 'bee done' }],
    });
  });
});
