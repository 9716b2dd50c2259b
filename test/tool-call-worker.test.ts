/**
 * Which worker runs a tool call, as the README's tour has a user find it: `keel run` names the
 * worker (`<pid>@<host>`) running each tool call's attempt, and that worker logs the call with its
 * pid, the run and the attempt. Killed, the call's next attempt is named on the worker that took
 * it over.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, killAfterEach, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);

describe('the worker running a tool call', () => {
  it('is named by keel run and logged by the worker, and again for the attempt another worker takes over', async () => {
    // turn 1: slow_work(4 s); the worker running it is killed, and the call's attempt 2 runs on the other worker
    // turn 2: the model answers "done"
    const { dir, configPath } = writeTestConfig('tool-worker', {
      activities: { tool: { startToCloseTimeout: '1 minute', heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' } } },
      modules: [join(ROOT, 'test', 'fixtures', 'crash-agents.ts')],
      models: [{ name: 'scripted/slow-one', script: [{ toolRequests: [{ name: 'slow_work', input: { seconds: 4 } }] }, { text: 'done' }] }],
      agents: [{ name: 'slow-one', model: 'scripted/slow-one', tools: ['slow_work'] }],
    });
    const env = { KEEL_TEST_DIR: dir };
    const workers = [spawnKeel(['worker', '--config', configPath], { env }), spawnKeel(['worker', '--config', configPath], { env })].map(track);
    await Promise.all(workers.map((worker) => worker.waitFor(/keel: worker \d+ on task queue/)));

    const run = track(spawnKeel(['run', 'slow-one', 'go', '--config', configPath]));
    await run.waitFor(/run (run-[\w-]+) started/);
    const runId = /run (run-[\w-]+) started/.exec(run.stderr())![1]!;
    const named = /⚙ slow_work runs on worker (\d+)@\S+ \(attempt 1\)/;
    await run.waitFor(named, 30_000);
    // The worker keel run names is the one running the call: kill it, as the README's tour has a user do.
    const victim = workers.find((worker) => String(worker.child.pid) === named.exec(run.stderr())![1]);
    expect(victim, `keel run named a worker that is not one of ${workers.map((worker) => worker.child.pid).join(', ')}:\n${run.stderr()}`).toBeDefined();
    const pid = victim!.child.pid!;
    await expect.poll(() => victim!.stderr(), { timeout: 5000, interval: 50 }).toContain(`keel: worker ${pid} runs tool slow_work (run ${runId}, attempt 1)`);
    // The call's line follows the model's request for it.
    expect(run.stderr().indexOf('→ slow_work(')).toBeLessThan(run.stderr().indexOf('⚙ slow_work runs on worker'));
    victim!.kill('SIGKILL');

    const other = workers.find((worker) => worker !== victim)!;
    const otherPid = other.child.pid!;
    await run.waitFor(new RegExp(`⚙ slow_work runs on worker ${otherPid}@\\S+ \\(attempt 2\\)`), 30_000);
    expect(await run.exited).toBe(0);
    expect(run.stdout()).toBe('done\n');
    await expect
      .poll(() => other.stderr(), { timeout: 5000, interval: 50 })
      .toContain(`keel: worker ${otherPid} runs tool slow_work (run ${runId}, attempt 2)`);
  });
});
