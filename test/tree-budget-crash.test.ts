/**
 * One budget for the tree while a worker dies: two sub-agents spend in parallel against the
 * root's ledger on two `keel worker` processes, and the worker running one of them is killed
 * (SIGKILL) mid-call. The tree still stops at the limit plus the calls in flight, and the
 * ledger counts every model call that completed exactly once (none lost with the dead worker,
 * none counted twice when its work moved).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { KeelClient, runErrorOf } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { ROOT, killAfterEach, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);
const EventType = temporal.api.enums.v1.EventType;
const LIMIT = 100;

const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

/** A sub-agent's script: many calls of 20 tokens, each asking for a short slow_work, then an answer it never reaches. */
const spenderScript = [
  ...Array.from({ length: 12 }, () => ({ toolRequests: [{ name: 'slow_work', input: { seconds: 0.4 } }], usage: { totalTokens: 20 } })),
  { text: 'never' },
];

describe('one budget for the tree, a worker killed', () => {
  it('counts every completed call once and stops the tree at the limit when the worker running a sub-agent dies', async () => {
    const { dir, configPath } = writeTestConfig('tree-crash', {
      activities: {
        model: { heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' } },
        tool: { startToCloseTimeout: '1 minute', heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' } },
      },
      modules: [join(ROOT, 'test', 'fixtures', 'crash-agents.ts')],
      models: [
        {
          name: 'scripted/tree-crash-root',
          script: [
            {
              toolRequests: [
                { name: 'delegate_to_spend-a', input: { task: 'a' } },
                { name: 'delegate_to_spend-b', input: { task: 'b' } },
              ],
              usage: { totalTokens: 10 },
            },
            { text: 'never' },
          ],
        },
        { name: 'scripted/tree-crash-a', script: spenderScript },
        { name: 'scripted/tree-crash-b', script: spenderScript },
      ],
      agents: [
        {
          name: 'tree-crash',
          model: 'scripted/tree-crash-root',
          use: [
            { name: 'budget', config: { limit: { totalTokens: LIMIT } } },
            { name: 'agents', config: { agents: [{ name: 'spend-a' }, { name: 'spend-b' }] } },
          ],
        },
        { name: 'spend-a', description: 'Spends.', model: 'scripted/tree-crash-a', tools: ['slow_work'], maxTurns: 20 },
        { name: 'spend-b', description: 'Spends.', model: 'scripted/tree-crash-b', tools: ['slow_work'], maxTurns: 20 },
      ],
    });
    const env = { KEEL_TEST_DIR: dir };
    const workers = [spawnKeel(['worker', '--config', configPath], { env }), spawnKeel(['worker', '--config', configPath], { env })];
    workers.forEach(track);
    await Promise.all(workers.map((worker) => worker.waitFor(/keel: worker \d+ on task queue/)));

    const client = await KeelClient.connect(loadConfig({ path: configPath }));
    try {
      const handle = await client.start('tree-crash', 'go');
      const slowLog = join(dir, 'slow.log');
      // Both sub-agents are spending: kill the worker running the latest tool call.
      await expect.poll(() => lines(slowLog).length, { timeout: 30_000, interval: 50 }).toBeGreaterThanOrEqual(2);
      const [, victimPid] = lines(slowLog).at(-1)!.split(' ');
      const victim = workers.find((worker) => String(worker.child.pid) === victimPid);
      expect(victim, `slow_work ran in pid ${victimPid}, not one of the workers`).toBeDefined();
      victim!.kill('SIGKILL');

      expect(await handle.result().then(() => undefined, runErrorOf)).toMatchObject({
        status: 'ABORTED',
        message: expect.stringMatching(/^budget: used \d+ of 100 totalTokens$/),
      });
      const status = await handle.status();
      // Every model call of the tree that completed, read from the sub-agents' histories.
      let completed = 0;
      for (const child of ['spend-a-1', 'spend-b-2']) {
        const events = (await client.temporal.workflow.getHandle(`${handle.runId}/${child}`).fetchHistory()).events ?? [];
        const modelCalls = new Set(
          events.filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel').map((event) => String(event.eventId)),
        );
        completed += events.filter(
          (event) =>
            event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED &&
            modelCalls.has(String(event.activityTaskCompletedEventAttributes?.scheduledEventId)),
        ).length;
      }
      expect(status.treeUsage).toEqual({ totalTokens: 10 + 20 * completed });
      expect(status.treeUsage!.totalTokens).toBeGreaterThanOrEqual(LIMIT);
      expect(status.treeUsage!.totalTokens).toBeLessThanOrEqual(LIMIT + 2 * 20);
    } finally {
      await client.close();
    }
  }, 120_000);
});
