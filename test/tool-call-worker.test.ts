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
    // turn 1: slow_work(3 s), whose worker is killed; the call's attempt 2 runs on the other worker
    // turn 2: the model answers "done"
    const { dir, configPath } = writeTestConfig('tool-worker', {
      activities: { tool: { startToCloseTimeout: '1 minute', heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' } } },
      modules: [join(ROOT, 'test', 'fixtures', 'crash-agents.ts')],
      models: [{ name: 'scripted/slow-one', script: [{ toolRequests: [{ name: 'slow_work', input: { seconds: 3 } }] }, { text: 'done' }] }],
      agents: [{ name: 'slow-one', model: 'scripted/slow-one', tools: ['slow_work'] }],
    });
    const env = { KEEL_TEST_DIR: dir };
    const first = track(spawnKeel(['worker', '--config', configPath], { env }));
    await first.waitFor(/keel: worker \d+ on task queue/);

    const run = track(spawnKeel(['run', 'slow-one', 'go', '--config', configPath]));
    await run.waitFor(/run (run-[\w-]+) started/);
    const runId = /run (run-[\w-]+) started/.exec(run.stderr())![1]!;
    const pid = first.child.pid!;
    await run.waitFor(new RegExp(`⚙ slow_work runs on worker ${pid}@\\S+ \\(attempt 1\\)`), 30_000);
    expect(first.stderr()).toContain(`keel: worker ${pid} runs tool slow_work (run ${runId}, attempt 1)`);
    // The call's line follows the model's request for it.
    expect(run.stderr().indexOf('→ slow_work(')).toBeLessThan(run.stderr().indexOf('⚙ slow_work runs on worker'));

    const second = track(spawnKeel(['worker', '--config', configPath], { env }));
    await second.waitFor(/keel: worker \d+ on task queue/);
    first.kill('SIGKILL');
    const other = second.child.pid!;
    await run.waitFor(new RegExp(`⚙ slow_work runs on worker ${other}@\\S+ \\(attempt 2\\)`), 30_000);
    expect(await run.exited).toBe(0);
    expect(run.stdout()).toBe('done\n');
    expect(second.stderr()).toContain(`keel: worker ${other} runs tool slow_work (run ${runId}, attempt 2)`);
  });
});
