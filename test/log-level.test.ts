/**
 * What a `keel worker` logs (docs/configuration.md, "Logs"): warnings and errors, workflow logs
 * included (Fallback's `model call failed, falling back`); `KEEL_LOG_LEVEL=INFO` shows more
 * (Retry's `model call failed, retrying`); a value that is not a level is refused with a
 * message naming the variable and the levels, and the worker logs at WARN.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { killAfterEach, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);

describe('KEEL_LOG_LEVEL', () => {
  it('INFO adds Retry’s info lines to the warnings; a bad value is named, with the levels, and WARN is used', async () => {
    // In each worker's run:
    // model call 1: scripted/flaky fails UNAVAILABLE; Retry logs (info) and retries
    // model call 2: scripted/flaky fails again; Fallback logs (warn) and asks scripted/backup
    // model call 3: scripted/backup answers
    const { configPath } = writeTestConfig(
      'log-level',
      {
        models: [
          {
            name: 'scripted/flaky',
            script: [{ error: { status: 'UNAVAILABLE', message: 'overloaded' } }, { error: { status: 'UNAVAILABLE', message: 'still overloaded' } }],
          },
          { name: 'scripted/backup', script: [{ text: 'from the backup' }] },
        ],
        agents: [
          {
            name: 'flaky',
            model: 'scripted/flaky',
            use: [
              { name: 'fallback', config: { models: ['scripted/backup'] } },
              { name: 'retry', config: { maxRetries: 1, initialDelayMs: 10, noJitter: true } },
            ],
          },
        ],
      },
      { queue: false },
    );
    const queues = { info: `log-info-${randomUUID()}`, bad: `log-bad-${randomUUID()}` };
    const info = track(spawnKeel(['worker', '--config', configPath], { env: { KEEL_LOG_LEVEL: 'INFO', KEEL_TASK_QUEUE: queues.info } }));
    const bad = track(spawnKeel(['worker', '--config', configPath], { env: { KEEL_LOG_LEVEL: 'loud', KEEL_TASK_QUEUE: queues.bad } }));
    await Promise.all([info, bad].map((worker) => worker.waitFor(/keel: worker \d+ on task queue/)));
    expect(bad.stderr()).toContain('keel: KEEL_LOG_LEVEL=loud is not one of TRACE, DEBUG, INFO, WARN, ERROR; using WARN\n');
    expect(info.stderr()).not.toContain('KEEL_LOG_LEVEL');

    const client = await KeelClient.connect(loadConfig({ path: configPath }));
    try {
      const results = await Promise.all([client.run('flaky', 'hi', { taskQueue: queues.info }), client.run('flaky', 'hi', { taskQueue: queues.bad })]);
      expect(results.map((result) => result.text)).toEqual(['from the backup', 'from the backup']);
    } finally {
      await client.close();
    }
    await Promise.all([info, bad].map((worker) => worker.waitFor(/model call failed, falling back/, 10_000)));
    expect(info.output()).toContain('model call failed, retrying');
    expect(bad.output(), 'at WARN, Retry’s info line is not printed').not.toContain('model call failed, retrying');
  });
});
