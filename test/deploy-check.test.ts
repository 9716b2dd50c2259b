/**
 * `keel deploy check` before a rollout (docs/deploys.md, "keel deploy check"): runs of an agent whose
 * middleware `pacing` is v1 (test/fixtures/patched-v1.ts) finish on a real `keel worker`; the
 * check, run with the config of the next build, replays them from the server. A change made
 * without `patched()` (unpatched-v2.ts: a timer before each model call) is caught, naming the
 * run and the first event it diverges at, exit 1; the same change behind `patched()`
 * (patched-v2.ts) passes, exit 0.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { ROOT, killAfterEach, runKeel, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);
const FIXTURES = join(ROOT, 'test', 'fixtures');

/** A build's config: agent `paced` (scripted, two model calls around a tool call) with the `pacing` middleware of `module`. */
function buildConfig(taskQueue: string, module: string) {
  return writeTestConfig('deploy-check', {
    taskQueue,
    server: { enabled: false },
    middlewareModules: [join(FIXTURES, module)],
    modules: [join(FIXTURES, 'crash-agents.ts')],
    models: [{ name: 'scripted/paced', script: [{ toolRequests: [{ name: 'record_fast', input: {} }] }, { text: 'paced' }] }],
    agents: [{ name: 'paced', model: 'scripted/paced', tools: ['record_fast'], use: [{ name: 'pacing' }] }],
  });
}

describe('keel deploy check', () => {
  it('catches a nondeterministic middleware change in recent runs and passes a patched one', async () => {
    const taskQueue = `deploy-check-${randomUUID()}`;
    const v1 = buildConfig(taskQueue, 'patched-v1.ts');
    const worker = track(spawnKeel(['worker', '--config', v1.configPath], { env: { KEEL_TEST_DIR: v1.dir } }));
    await worker.waitFor(/keel: worker \d+ on task queue/, 120_000);
    const client = await KeelClient.connect(loadConfig({ path: v1.configPath }));
    const runIds: string[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const handle = await client.start('paced', 'go');
        expect((await handle.result()).text).toBe('paced');
        runIds.push(handle.runId);
      }
      // Visibility lists the runs a moment after they close.
      await expect
        .poll(async () => (await runKeel(['deploy', 'check', '--json', '--config', v1.configPath])).stdout, { timeout: 30_000, interval: 500 })
        .toContain('"paced":2');
    } finally {
      await client.close();
    }
    worker.kill('SIGTERM');

    const unpatched = buildConfig(taskQueue, 'unpatched-v2.ts');
    const caught = await runKeel(['deploy', 'check', '--config', unpatched.configPath]);
    expect(caught.code, caught.stderr).toBe(1);
    for (const runId of runIds) expect(caught.stdout).toMatch(new RegExp(`✗ run ${runId} \\(agent paced, .*\\) does not replay at event \\d+ \\(\\w+\\)`));
    expect(caught.stdout).toContain('keel deploy check: 0 of 2 runs replay against this build (paced 2); 2 would fail');

    const json = await runKeel(['deploy', 'check', '--json', '--per-agent', '1', '--config', unpatched.configPath]);
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as { checked: Record<string, number>; failures: Array<{ runId: string; event?: { id: number; type: string } }> };
    expect(report.checked).toEqual({ paced: 1 });
    expect(report.failures).toHaveLength(1);
    expect(report.failures[0]!.runId).toBe(runIds[1]);
    expect(report.failures[0]!.event?.id).toBeGreaterThan(0);

    const patched = buildConfig(taskQueue, 'patched-v2.ts');
    const passed = await runKeel(['deploy', 'check', '--config', patched.configPath]);
    expect(passed.stdout + passed.stderr).toContain('keel deploy check: 2 of 2 runs replay against this build (paced 2)');
    expect(passed.code).toBe(0);

    const bad = await runKeel(['deploy', 'check', '--per-agent', 'lots', '--config', patched.configPath]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--per-agent: a whole number of runs, 1 or more, not "lots"');
  });
});
