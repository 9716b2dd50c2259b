/**
 * A tool that throws, as a user of a project of their own meets it: a real `keel worker` loads a
 * tool module (a fixture) whose tool throws. `keel run` and `keel status` name the file and line
 * of the user's code it threw at and how the model could see the error instead (SoftToolErrors);
 * the worker logs the failure in a line or two, not the stack of keel's and the SDK's code.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, killAfterEach, runKeel, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);

const FIXTURE = join(ROOT, 'test', 'fixtures', 'throwing-tools.ts');

describe('a tool that throws', () => {
  it("fails the run saying where in the user's module it threw, and the worker logs it in a line", async () => {
    // turn 1: charge({ amount: 25 }), which throws; the run fails
    const throwLine =
      readFileSync(FIXTURE, 'utf8')
        .split('\n')
        .findIndex((line) => line.includes('throw new Error')) + 1;
    const at = `${FIXTURE}:${throwLine}:9`;
    const { configPath } = writeTestConfig('tool-failure', {
      modules: [FIXTURE],
      models: [{ name: 'scripted/charger', script: [{ toolRequests: [{ name: 'charge', input: { amount: 25 } }] }, { text: 'never' }] }],
      agents: [{ name: 'charger', model: 'scripted/charger', tools: ['charge'] }],
    });
    const worker = track(spawnKeel(['worker', '--config', configPath]));
    await worker.waitFor(/keel: worker \d+ on task queue/);
    const startup = worker.stderr().length;

    const run = await runKeel(['run', 'charger', 'pay', '--config', configPath]);
    expect(run.code).toBe(1);
    const runId = /run (run-[\w-]+) started/.exec(run.stderr)![1]!;
    expect(run.stderr).toContain(
      `run ${runId} failed: INTERNAL: tool "charge" failed: card declined for 25 (thrown at ${at}); the softToolErrors middleware would answer a failing tool call to the model instead of failing the run (docs/middleware/soft-tool-errors.md)`,
    );

    const status = await runKeel(['status', runId, '--config', configPath]);
    expect(JSON.parse(status.stdout)).toMatchObject({ status: 'failed', error: { status: 'INTERNAL', message: expect.stringContaining(`(thrown at ${at})`) } });

    // The worker: the call's attempt, its failure and the run's, each on one line, with where it threw.
    await expect.poll(() => worker.stderr().slice(startup), { timeout: 10_000, interval: 100 }).toContain(`run ${runId} (agent charger, turn 1) failed:`);
    const logged = worker
      .stderr()
      .slice(startup)
      .split('\n')
      .filter((line) => line.includes(runId));
    expect(logged).toHaveLength(3);
    expect(logged[0]).toContain(`keel: worker ${worker.child.pid} runs tool charge (run ${runId}, attempt 1)`);
    expect(logged[1]).toMatch(
      new RegExp(
        `\\[WARN\\] callTool failed in run ${runId} \\(agent charger, turn 1, attempt 1\\): INTERNAL: tool "charge" failed: card declined for 25 \\(thrown at ${at}\\)$`,
      ),
    );
    expect(logged[2]).toMatch(
      new RegExp(
        `\\[WARN\\] run ${runId} \\(agent charger, turn 1\\) failed: tool "charge" failed: card declined for 25 \\(thrown at ${at}\\); the softToolErrors`,
      ),
    );
    // No stack of keel's or the SDK's code.
    expect(worker.stderr().slice(startup)).not.toMatch(/^\s+at |node_modules/m);
  });
});
