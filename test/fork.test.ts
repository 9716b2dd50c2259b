/**
 * Forks (docs/fork.md), with real `keel worker` processes and the `stepper` fixture, whose every
 * `step` call leaves a line in steps.log. Planned turns of the source run: 1 step 1, 2 step 2,
 * 3 step 3, 4 the answer. A fork at turn 2 runs step 3 and answers, and never step 1 or 2 again.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KeelClient, type RunHandle } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { FORK_MEMO_KEY } from '../src/core/fork';
import { forkPointQuery } from '../src/core/protocol';
import { ROOT, runKeel, spawnKeel, writeTestConfig, type KeelProcess } from './support/processes';
import { temporalCli } from './support/temporal-cli';

const { dir, configPath, taskQueue } = writeTestConfig('fork', { modules: [join(ROOT, 'test', 'fixtures', 'fork-agents.ts')] });
let worker: KeelProcess;
let client: KeelClient;

beforeAll(async () => {
  worker = spawnKeel(['worker', '--config', configPath], { env: { KEEL_TEST_DIR: dir } });
  await worker.waitFor(/keel: worker \d+ on task queue/);
  client = await KeelClient.connect(loadConfig({ path: configPath }));
});
afterAll(async () => {
  await client?.close();
  worker?.kill('SIGTERM');
  await worker?.exited;
});

/** The `step` calls run `runId` made, by step number. */
const calls = (runId: string): number[] =>
  (existsSync(join(dir, 'steps.log')) ? readFileSync(join(dir, 'steps.log'), 'utf8').trim().split('\n') : [])
    .filter((line) => line.startsWith(`call ${runId} `))
    .map((line) => Number(line.split(' ')[2]));

/** The generate runs of the test's task queue (a refused fork must add none). */
const generateRuns = async (): Promise<number> => {
  let count = 0;
  for await (const _ of client.temporal.workflow.list({ query: `TaskQueue = '${taskQueue}' AND WorkflowType = 'generateWorkflow'` })) count++;
  return count;
};

describe('RunHandle.fork', () => {
  let source: RunHandle;
  let fork: RunHandle;

  it('goes on from turn 2 of a 4-turn run: no tool of turns 1-2 runs again, the edit shows, the usage carried is said', async () => {
    source = await client.start('stepper', 'take your steps');
    expect((await source.result()).text).toBe('done [step 1, step 2, step 3] after "take your steps"');
    expect(calls(source.runId)).toEqual([1, 2, 3]);

    const started = await source.fork({ at: 2, toolResults: { '2.0': { n: 2, note: 'step 2, edited' } } });
    fork = started.handle;
    // Two model calls before the fork point, 10 + 2 tokens each: said, and not in the fork's own usage.
    expect(started).toMatchObject({ source: source.runId, turn: 2, usage: { inputTokens: 20, outputTokens: 4 } });
    const result = await fork.result();
    expect(result.text).toBe('done [step 1, step 2, edited, step 3] after "take your steps"');
    expect(calls(fork.runId)).toEqual([3]);
    expect(result.turns).toBe(4);
    expect(result.usage).toMatchObject({ inputTokens: 20, outputTokens: 4 });
    const status = await fork.status();
    expect(status.fork).toEqual({ source: source.runId, turn: 2, usage: { inputTokens: 20, outputTokens: 4 } });
    // The lineage without a worker: the memo, and the search attribute KeelForkOf.
    const described = await client.temporal.workflow.getHandle(fork.runId).describe();
    expect(described.memo?.[FORK_MEMO_KEY]).toEqual({ source: source.runId, turn: 2, usage: { inputTokens: 20, outputTokens: 4 } });
    await expect
      .poll(async () => {
        const found: string[] = [];
        for await (const run of client.temporal.workflow.list({ query: `KeelForkOf = '${source.runId}'` })) found.push(run.workflowId);
        return found;
      })
      .toEqual([fork.runId]);
  });

  it('forks a fork, at a turn of its own and at one before it (whose usage its source tells)', async () => {
    const atOwn = await fork.fork({ at: 3, message: 'now stop' });
    expect(atOwn.usage).toEqual({ inputTokens: 30, outputTokens: 6 });
    // Turn 3's results are kept and a user message added: the model answers at once, no step runs.
    expect((await atOwn.handle.result()).text).toBe('done [step 1, step 2, edited, step 3] after "now stop"');
    expect(calls(atOwn.runId)).toEqual([]);

    const before = await fork.fork({ at: 1 });
    expect(before.usage).toEqual({ inputTokens: 10, outputTokens: 2 });
    expect((await before.handle.result()).text).toBe('done [step 1, step 2, step 3] after "take your steps"');
    expect(calls(before.runId)).toEqual([2, 3]);
  });

  it('keeps the holds decided before the fork point decided: only a call of its own turns asks', async () => {
    const guarded = await client.start('guarded-stepper', 'take your steps');
    // Turn 1's call waits for a decision: a fork there is refused (its call would have no result), a fork at 0 is not.
    await expect.poll(async () => (await guarded.status()).interrupts.map((hold) => hold.id), { timeout: 20_000 }).toEqual(['i1']);
    await expect(guarded.fork({ at: 1 })).rejects.toThrow(
      `turn 1 of run ${guarded.runId} has not finished its tool calls (1.0 step): fork at turn 0, or once they are decided`,
    );
    const before = await guarded.fork({ at: 0, message: 'steps 1' });
    await expect.poll(async () => (await before.handle.status()).interrupts.length, { timeout: 20_000 }).toBe(1);
    await before.handle.cancel();
    for (const id of ['i1', 'i2', 'i3']) {
      await expect.poll(async () => (await guarded.status()).interrupts.map((hold) => hold.id), { timeout: 20_000 }).toEqual([id]);
      await guarded.approve(id);
    }
    expect((await guarded.result()).text).toBe('done [step 1, step 2, step 3] after "take your steps"');
    const forked = await guarded.fork({ at: 2 });
    await expect.poll(async () => (await forked.handle.status()).interrupts.map((hold) => hold.input), { timeout: 20_000 }).toEqual([{ n: 3 }]);
    expect(calls(forked.runId)).toEqual([]);
    await forked.handle.approve((await forked.handle.pendingHolds())[0]!.id);
    expect((await forked.handle.result()).text).toBe('done [step 1, step 2, step 3] after "take your steps"');
    expect(calls(forked.runId)).toEqual([3]);
  });

  it("keeps the source run's own middleware, and refuses the end of a run that returned with a held call", async () => {
    // A run given its own ToolApproval (not the agent's): the fork's step still asks.
    const approved = await client.start('stepper', 'steps 2', { use: [{ name: 'toolApproval', config: {} }] });
    for (const id of ['i1', 'i2']) {
      await expect.poll(async () => (await approved.status()).interrupts.map((hold) => hold.id), { timeout: 20_000 }).toEqual([id]);
      await approved.approve(id);
    }
    await approved.result();
    const forked = await approved.fork({ at: 1 });
    await expect.poll(async () => (await forked.handle.status()).interrupts.map((hold) => hold.toolName), { timeout: 20_000 }).toEqual(['step']);
    expect(calls(forked.runId)).toEqual([]);
    await forked.handle.cancel();

    // interruptMode 'return': the run completes with its held call and no result for it.
    const returned = await client.start('guarded-stepper', 'steps 1', { interruptMode: 'return' });
    expect((await returned.result()).finishReason).toBe('interrupted');
    await expect(returned.fork({ at: 1, message: 'go on' })).rejects.toThrow(/turn 1 of run .* has not finished its tool calls \(1\.0 step\)/);
  });

  it('forks at turn 0 with another message, and goes on with another agent or model', async () => {
    const again = await source.fork({ at: 0, message: 'steps 1' });
    expect((await again.handle.result()).text).toBe('done [step 1] after "steps 1"');
    const terse = await source.fork({ at: 4, message: 'and now?', agent: 'terse' });
    expect((await terse.handle.result()).text).toBe('other model: and now?');
    const model = await source.fork({ at: 4, message: 'what model?', model: 'scripted/stepper-other' });
    expect((await model.handle.result()).text).toBe('other model: what model?');
  });

  it('forks a run whose history continued as new, and a sub-agent run', async () => {
    const long = await client.start('stepper', 'steps 5', { continueAsNewAt: { historyEvents: 20 } });
    expect((await long.result()).text).toBe('done [step 1, step 2, step 3, step 4, step 5] after "steps 5"');
    const runs = [];
    for await (const run of client.temporal.workflow.list({ query: `WorkflowId = '${long.runId}'` })) runs.push(run.status.name);
    expect(runs.filter((name) => name === 'CONTINUED_AS_NEW').length).toBeGreaterThan(0);
    const late = await long.fork({ at: 4 });
    expect(late.usage).toEqual({ inputTokens: 40, outputTokens: 8 });
    expect((await late.handle.result()).text).toBe('done [step 1, step 2, step 3, step 4, step 5] after "steps 5"');
    expect(calls(late.runId)).toEqual([5]);

    const parent = await client.start('delegator', 'delegate it');
    expect((await parent.result()).text).toBe('delegated');
    const child = client.getHandle(`${parent.runId}/stepper-1`);
    expect(calls(child.runId)).toEqual([1, 2]);
    const forked = await child.fork({ at: 1 });
    expect((await forked.handle.result()).text).toBe('done [step 1, step 2] after "steps 2"');
    expect(calls(forked.runId)).toEqual([2]);
  });

  it('refuses bad input in one line, saying what was wrong, and starts nothing', async () => {
    const before = await generateRuns();
    const refused = async (options: Parameters<RunHandle['fork']>[0]) => {
      const began = Date.now();
      const error = await source.fork(options).then(
        () => undefined,
        (thrown: unknown) => thrown as Error,
      );
      return { message: error?.message ?? '(no error)', ms: Date.now() - began };
    };
    const pastEnd = await refused({ at: 9 });
    expect(pastEnd.message).toBe(`run ${source.runId} has 4 turns: fork at a turn from 0 to 4 (got 9)`);
    expect(pastEnd.ms).toBeLessThan(1000);
    expect((await refused({ at: 4 })).message).toMatch(/turn 4 of run .* is its answer: give a message/);
    expect((await refused({ at: 2, toolResults: { '3.0': { n: 3, note: 'x' } } })).message).toMatch(
      /^--tool-result 3\.0: no finished tool call "3\.0" before turn 3 of run .*; calls there: 1\.0 \(step\), 2\.0 \(step\)$/,
    );
    const schema = await refused({ at: 2, toolResults: { '1.0': { n: 'one' } } });
    expect(schema.message).toMatch(/^--tool-result 1\.0: .*output for tool "step" fails its schema: n: /);
    expect((await refused({ at: 2, agent: 'nobody' })).message).toMatch(
      /agent "nobody" is not registered on this worker; registered agents: delegator, guarded-stepper, stepper, terse/,
    );
    expect((await refused({ at: 2, model: 'scripted/nowhere' })).message).toMatch(
      /--model scripted\/nowhere: the workers have no model "scripted\/nowhere"; they have: /,
    );
    expect((await refused({ at: 2, message: '   ' })).message).toBe('--message: the user message is empty');
    await expect(client.getHandle('no-such-run').fork({ at: 1 })).rejects.toThrow('no run "no-such-run" exists');
    expect(await generateRuns()).toBe(before);
  });

  it('keel fork prints { runId, source, turn } with --json, and says what is wrong in one line', async () => {
    const forked = await runKeel(['fork', source.runId, '--at', '3', '--message', 'from the command line', '--json', '--config', configPath]);
    expect(forked.code).toBe(0);
    const printed = JSON.parse(forked.stdout) as { runId: string; source: string; turn: number };
    expect(printed).toMatchObject({ source: source.runId, turn: 3, usage: { inputTokens: 30, outputTokens: 6 } });
    expect((await client.getHandle(printed.runId).result()).text).toBe('done [step 1, step 2, step 3] after "from the command line"');
    // keel status shows the lineage.
    const status = await runKeel(['status', printed.runId, '--config', configPath]);
    expect((JSON.parse(status.stdout) as { fork?: unknown }).fork).toEqual({ source: source.runId, turn: 3, usage: { inputTokens: 30, outputTokens: 6 } });

    const badJson = await runKeel(['fork', source.runId, '--at', '2', '--tool-result', '1.0={nope', '--config', configPath]);
    expect(badJson.code).toBe(2);
    expect(badJson.stderr.trim().split('\n')).toHaveLength(1);
    expect(badJson.stderr).toMatch(/--tool-result 1\.0: the result is not JSON/);
    const noTurn = await runKeel(['fork', source.runId, '--config', configPath]);
    expect(noTurn.code).toBe(2);
    expect(noTurn.stderr).toMatch(/needs the turn to fork at: --at <turn>/);
    const past = await runKeel(['fork', source.runId, '--at', '7', '--config', configPath]);
    expect(past.code).toBe(1);
    expect(past.stderr.trim()).toBe(`keel fork: run ${source.runId} has 4 turns: fork at a turn from 0 to 4 (got 7)`);
  });

  it('examples/fork.ts forks and compares, as docs/fork.md shows', async () => {
    const { forkAndCompare } = await import('../examples/fork');
    const lines = await forkAndCompare(client, source.runId, 1, 'just one step');
    expect(lines[0]).toBe(`run ${source.runId}: done [step 1, step 2, step 3] after "take your steps"`);
    expect(lines[1]).toMatch(
      /^fork fork-.* \(at turn 1, carrying \{"inputTokens":10,"outputTokens":2\}\): done \[step 1, step 2, step 3\] after "just one step"$/,
    );
  });

  it('takes a forged fork input sent with the temporal CLI as a claim: its carried usage counts against no Budget', async () => {
    // What a fork carries is said, never counted: a made-up carried usage far over the run's own Budget stops nothing.
    const runId = `forged-fork-${Date.now()}`;
    const input = {
      agent: 'stepper',
      messages: [{ role: 'user', content: [{ text: 'steps 1' }] }],
      use: [{ name: 'budget', config: { limit: { inputTokens: 100 } } }],
      fork: { source: 'no-such-run', turn: 0, usage: { inputTokens: 999_999 } },
    };
    const started = await temporalCli([
      'workflow',
      'start',
      '--type',
      'generateWorkflow',
      '--task-queue',
      taskQueue!,
      '--workflow-id',
      runId,
      '--input',
      JSON.stringify(input),
    ]);
    expect(started.code, started.stderr).toBe(0);
    const result = await client.getHandle(runId).result();
    expect(result.text).toBe('done [step 1] after "steps 1"');
    expect(result.usage).toEqual({ inputTokens: 20, outputTokens: 4 });
    expect((await client.getHandle(runId).status()).fork).toEqual(input.fork);
  });

  it('starts one run when two forks race for the same id; its tools run once', async () => {
    const runId = `raced-fork-${Date.now()}`;
    const outcomes = await Promise.allSettled([source.fork({ at: 2, runId }), source.fork({ at: 2, runId })]);
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    const refused = outcomes.find((outcome) => outcome.status === 'rejected');
    expect(String(refused?.reason)).toMatch(new RegExp(`a run with id "${runId}" is already open`));
    await client.getHandle(runId).result();
    expect(calls(runId)).toEqual([3]);
  });

  it('answers the fork point query for a turn from its own record', async () => {
    const point = await client.temporal.workflow.getHandle(source.runId).query(forkPointQuery, 3);
    expect(point).toEqual({ agent: 'stepper', turns: 4, usage: { inputTokens: 30, outputTokens: 6 } });
  });
});

describe('a fork when its task queue has no worker (it was SIGKILLed)', () => {
  it('starts nothing, and says no worker checked it', async () => {
    const alone = writeTestConfig('fork-alone', { modules: [join(ROOT, 'test', 'fixtures', 'fork-agents.ts')] });
    const lone = spawnKeel(['worker', '--config', alone.configPath], { env: { KEEL_TEST_DIR: alone.dir } });
    await lone.waitFor(/keel: worker \d+ on task queue/);
    const aloneClient = await KeelClient.connect(loadConfig({ path: alone.configPath }));
    try {
      const source = await aloneClient.start('stepper', 'steps 1');
      await source.result();
      lone.kill('SIGKILL');
      await lone.exited;
      // The end of a completed run is read without a worker; the check needs one, and none comes.
      await expect(source.fork({ at: 2, message: 'again' })).rejects.toThrow(
        `no worker of task queue "${alone.taskQueue}" checked the fork within 30 s: start one (of this keel version or later: older workers lack the check); nothing was started`,
      );
      let runs = 0;
      for await (const _ of aloneClient.temporal.workflow.list({ query: `TaskQueue = '${alone.taskQueue}' AND WorkflowType = 'generateWorkflow'` })) runs++;
      expect(runs).toBe(1);
    } finally {
      await aloneClient.close();
    }
  }, 60_000);
});

describe('a fork on a namespace set up before forks (KeelAgent and KeelStatus, no KeelForkOf)', () => {
  it('runs, keeps its run listable by agent, and records its lineage in its status and memo only', async () => {
    const namespace = `fork-old-${Date.now()}`;
    expect((await temporalCli(['operator', 'namespace', 'create', '--namespace', namespace])).code).toBe(0);
    await expect
      .poll(
        async () =>
          (
            await temporalCli([
              'operator',
              'search-attribute',
              'create',
              '--namespace',
              namespace,
              '--name',
              'KeelAgent',
              '--type',
              'Keyword',
              '--name',
              'KeelStatus',
              '--type',
              'Keyword',
            ])
          ).code,
        { timeout: 20_000, interval: 500 },
      )
      .toBe(0);
    const old = writeTestConfig('fork-old', {
      temporal: { address: inject('temporalAddress'), namespace },
      modules: [join(ROOT, 'test', 'fixtures', 'fork-agents.ts')],
    });
    const oldWorker = spawnKeel(['worker', '--config', old.configPath], { env: { KEEL_TEST_DIR: old.dir } });
    try {
      await oldWorker.waitFor(/keel: worker \d+ on task queue/);
      const oldClient = await KeelClient.connect(loadConfig({ path: old.configPath }));
      try {
        const source = await oldClient.start('stepper', 'steps 2');
        await source.result();
        const { handle } = await source.fork({ at: 1 });
        expect((await handle.result()).text).toBe('done [step 1, step 2] after "steps 2"');
        expect((await handle.status()).fork).toMatchObject({ source: source.runId, turn: 1 });
        const listed = async (query: string) => {
          const found: string[] = [];
          for await (const run of oldClient.temporal.workflow.list({ query })) found.push(run.workflowId);
          return found.sort();
        };
        await expect.poll(() => listed(`KeelAgent = 'stepper' AND KeelStatus = 'completed'`), { timeout: 20_000 }).toEqual([source.runId, handle.runId].sort());
        expect(oldWorker.stderr()).toMatch(
          /the search attributes KeelForkOf, KeelTenant, KeelOwner are not registered in namespace "fork-old-\d+", so forks by their source and runs by tenant or owner cannot be listed/,
        );
      } finally {
        await oldClient.close();
      }
    } finally {
      oldWorker.kill('SIGTERM');
      await oldWorker.exited;
    }
  });
});
