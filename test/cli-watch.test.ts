/**
 * The CLI's view of runs, with real processes: `keel --version`; Ctrl-C on a watching `keel run`
 * stops the watch, not the run, and says how to watch it again; `keel watch` attaches to a run
 * under way and exits with its outcome; `keel list` lists runs by agent and state (a waiting run
 * with its holds), and refuses a state that does not exist.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, killAfterEach, runKeel, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);

interface Listed {
  runId: string;
  agent?: string;
  state: string;
  holds?: number;
  prompt?: string;
}

describe('keel --version', () => {
  it("prints the package's version, without a config", async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const plain = await runKeel(['--version'], { cwd: '/' });
    expect(plain).toMatchObject({ code: 0, stdout: `keel ${version}\n` });
    expect(JSON.parse((await runKeel(['-v', '--json'])).stdout)).toEqual({ version });
  });
});

/** Agent names of this test alone: the namespace is shared with every other test. */
const slowpoke = `slowpoke-${Date.now()}`;
const asker = `asker-${Date.now()}`;

describe('watching and listing runs', () => {
  it('stops watching on Ctrl-C while the run goes on, watches it again to its end, and lists runs by agent and state', async () => {
    const { dir, configPath: config } = writeTestConfig('watch', {
      server: { enabled: false },
      modules: [join(ROOT, 'test', 'fixtures', 'crash-agents.ts')],
      models: [
        { name: 'scripted/slow', script: [{ toolRequests: [{ name: 'slow_work', input: { seconds: 20 } }] }, { text: 'slow done' }] },
        { name: 'scripted/asks', script: [{ toolRequests: [{ name: 'record_fast', input: {} }] }, { text: 'asked' }] },
      ],
      agents: [
        { name: slowpoke, model: 'scripted/slow', tools: ['slow_work'] },
        { name: asker, model: 'scripted/asks', tools: ['record_fast'], use: [{ name: 'toolApproval' }] },
      ],
    });
    const env = { KEEL_TEST_DIR: dir };
    const worker = track(spawnKeel(['worker', '--config', config], { env }));
    await worker.waitFor(/keel: worker \d+ on task queue/);

    const run = track(spawnKeel(['run', slowpoke, 'take', 'your', 'time', '--config', config]));
    await run.waitFor(/run (run-[\w-]+) started/);
    const runId = /run (run-[\w-]+) started/.exec(run.stderr())![1]!;
    await run.waitFor(/slow_work/);
    run.kill('SIGINT');
    expect(await run.exited).toBe(130);
    expect(run.stderr()).toContain(`stopped watching; run ${runId} goes on. Watch it again with keel watch ${runId}, or stop it with keel abort ${runId}`);
    expect(JSON.parse((await runKeel(['status', runId, '--json', '--config', config])).stdout)).toMatchObject({ status: 'running' });

    const watch = track(spawnKeel(['watch', runId, '--config', config]));
    expect(await watch.exited).toBe(0);
    expect(watch.stdout()).toBe('slow done\n');
    expect(watch.stderr()).toContain(`watching run ${runId}`);
    const unknown = await runKeel(['watch', 'run-nope', '--config', config]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/keel watch: .*run-nope/);

    const { runId: waiting } = JSON.parse((await runKeel(['run', asker, 'go', '--detach', '--json', '--config', config])).stdout) as { runId: string };
    const list = async (...args: string[]) => (JSON.parse((await runKeel(['list', '--json', ...args, '--config', config])).stdout) as { runs: Listed[] }).runs;
    await expect
      .poll(async () => (await list('--status', 'waiting', '--agent', asker)).map((listed) => listed.runId), { timeout: 30_000, interval: 300 })
      .toContain(waiting);
    expect((await list('--status', 'waiting', '--agent', asker)).find((listed) => listed.runId === waiting)).toMatchObject({
      agent: asker,
      state: 'waiting',
      holds: 1,
      prompt: 'go',
    });
    expect(await list('--agent', slowpoke)).toEqual([expect.objectContaining({ runId, agent: slowpoke, state: 'completed', prompt: 'take your time' })]);
    // The namespace is shared with other tests: filter by agent too.
    expect((await list('--status', 'completed', '--agent', slowpoke)).map((listed) => listed.runId)).toEqual([runId]);
    expect(await list('--status', 'completed', '--agent', asker)).toEqual([]);
    expect(await list('--limit', '1')).toHaveLength(1);
    const human = await runKeel(['list', '--agent', asker, '--config', config]);
    expect(human.stdout).toContain(`${waiting}  waiting (1 hold)  ${asker}`);
    const bad = await runKeel(['list', '--status', 'sleeping', '--config', config]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('"sleeping" is not a run state; one of running, waiting, completed');
    await runKeel(['abort', waiting, '--config', config]);
  });
});
