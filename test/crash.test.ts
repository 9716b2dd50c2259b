/**
 * A worker process dies (SIGKILL) in the middle of a tool call: the run completes on the
 * other worker, the sibling tool that had finished is not run again, and the retried tool
 * sees the idempotency key of its first attempt.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { ROOT, killAfterEach, spawnKeel, writeTestConfig, type KeelProcess, CRASH_AGENT_CONFIG } from './support/processes';

const track = killAfterEach(afterEach);

function lines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];
}

/** Two `keel worker` processes of `configPath`, polling, their tools logging under `dir`. */
async function twoWorkers(configPath: string, dir: string): Promise<KeelProcess[]> {
  const env = { KEEL_TEST_DIR: dir };
  const workers = [spawnKeel(['worker', '--config', configPath], { env }), spawnKeel(['worker', '--config', configPath], { env })];
  workers.forEach(track);
  await Promise.all(workers.map((worker) => worker.waitFor(/keel: worker \d+ on task queue/)));
  return workers;
}

/** Once slow_work started (`afterMs` later), SIGKILLs the worker running it; its pid. */
async function killWorkerRunningSlowWork(workers: KeelProcess[], slowLog: string, afterMs = 0): Promise<string> {
  await expect.poll(() => lines(slowLog).length, { timeout: 30_000 }).toBeGreaterThan(0);
  if (afterMs) await new Promise((resolve) => setTimeout(resolve, afterMs));
  const [, victimPid] = lines(slowLog)[0]!.split(' ');
  const victim = workers.find((worker) => String(worker.child.pid) === victimPid);
  expect(victim, `slow_work ran in pid ${victimPid}, not one of the workers`).toBeDefined();
  victim!.kill('SIGKILL');
  return victimPid!;
}

describe('worker crash', () => {
  it('finishes the run on another worker without repeating a finished tool call', async () => {
    // turn 1: record_fast and slow_work(4 s) at once; the worker running slow_work is killed
    // turn 2: the model answers "done"
    const { dir, configPath } = writeTestConfig('crash', {
      ...CRASH_AGENT_CONFIG,
    });
    const workers = await twoWorkers(configPath, dir);
    const client = await KeelClient.connect(loadConfig({ path: configPath }));
    try {
      const handle = await client.start('crash', 'go');
      const slowLog = join(dir, 'slow.log');
      const victimPid = await killWorkerRunningSlowWork(workers, slowLog, 500);

      const result = await handle.result();
      expect(result.text).toBe('done');

      const fast = lines(join(dir, 'fast.log'));
      expect(fast, 'record_fast finished before the kill and must not run again').toHaveLength(1);
      const starts = lines(slowLog)
        .filter((line) => line.startsWith('start '))
        .map((line) => line.split(' '));
      const ends = lines(slowLog).filter((line) => line.startsWith('end '));
      expect(starts).toHaveLength(2);
      expect(ends).toHaveLength(1);
      const [first, second] = starts as [string[], string[]];
      expect(first[1]).toBe(victimPid);
      expect(second[1]).not.toBe(victimPid);
      expect(first[2]).toBe('1');
      expect(second[2]).toBe('2');
      expect(second[3]).toBe(first[3]);
      // <run id>/<temporal run id>/<activity id>: the same on the retry, unique for every other call.
      expect(first[3]).toMatch(new RegExp(`^${handle.runId}/[0-9a-f-]{36}/\\d+$`));
    } finally {
      await client.close();
    }
  });
});

describe('worker crash between a read and an edit', () => {
  it('rebuilds the read cache on the next worker, so the edit still sees the read', async () => {
    // turn 1: read_file notes.txt; turn 2: slow_work (the only worker is SIGKILLed; a new one starts);
    // turn 3: edit_file notes.txt, which needs the read of turn 1; turn 4: edited
    const { dir, configPath } = writeTestConfig('fs-crash', {
      activities: { tool: { startToCloseTimeout: '1 minute', heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' } } },
      modules: [join(ROOT, 'test', 'fixtures', 'fs-agents.ts')],
    });
    mkdirSync(join(dir, 'root'));
    writeFileSync(join(dir, 'root', 'notes.txt'), 'a draft\n');
    const env = { KEEL_TEST_DIR: dir };
    const first = spawnKeel(['worker', '--config', configPath], { env });
    track(first);
    await first.waitFor(/keel: worker \d+ on task queue/);
    const client = await KeelClient.connect(loadConfig({ path: configPath }));
    try {
      const handle = await client.start('editor', 'go');
      await expect.poll(() => lines(join(dir, 'slow.log')).length, { timeout: 30_000 }).toBeGreaterThan(0);
      first.kill('SIGKILL');
      await first.exited;
      const second = spawnKeel(['worker', '--config', configPath], { env });
      track(second);
      await second.waitFor(/keel: worker \d+ on task queue/);
      const result = await handle.result();
      expect(result.text).toBe('edited');
      expect(readFileSync(join(dir, 'root', 'notes.txt'), 'utf8')).toBe('a final\n');
      const answers = result.messages
        .filter((message) => message.role === 'tool')
        .map((message) => (message.content[0] as { toolResponse: { output: unknown } }).toolResponse.output);
      expect(answers.at(-1)).toBe('Successfully applied 1 edit(s) to notes.txt.');
    } finally {
      await client.close();
    }
  });

  it('runs a local tool call again on another worker, with the same key, when the worker running it is SIGKILLed', async () => {
    // A local call lives in its workflow task: the kill leaves the task to time out (10 s) and the
    // other worker replays the run and runs the call again; nothing of it reached history before.
    const { dir, configPath } = writeTestConfig('crash-local', {
      modules: [join(ROOT, 'test', 'fixtures', 'crash-agents.ts')],
      models: [{ name: 'scripted/crash-local', script: [{ toolRequests: [{ name: 'slow_work', input: { seconds: 3 } }] }, { text: 'done' }] }],
      agents: [{ name: 'crash-local', model: 'scripted/crash-local', tools: ['slow_work'], local: { models: true, tools: true } }],
    });
    const workers = await twoWorkers(configPath, dir);
    const client = await KeelClient.connect(loadConfig({ path: configPath }));
    try {
      const handle = await client.start('crash-local', 'go');
      const slowLog = join(dir, 'slow.log');
      const victimPid = await killWorkerRunningSlowWork(workers, slowLog);

      expect((await handle.result()).text).toBe('done');
      const starts = lines(slowLog)
        .filter((line) => line.startsWith('start '))
        .map((line) => line.split(' '));
      expect(starts).toHaveLength(2);
      const [first, second] = starts as [string[], string[]];
      expect(second[1]).not.toBe(victimPid);
      // The same key on the run again: the call's id in its run did not change.
      expect(second[3]).toBe(first[3]);
      expect(first[3]).toMatch(new RegExp(`^${handle.runId}/[0-9a-f-]{36}/\\d+$`));
      expect(lines(slowLog).filter((line) => line.startsWith('end '))).toHaveLength(1);
    } finally {
      await client.close();
    }
  });
});
