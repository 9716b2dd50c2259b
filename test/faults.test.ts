/**
 * Faults under load, with real processes and real servers (never a mocked Temporal):
 *
 * 1. Two `keel worker` processes share a queue; 20 times, both up, a four-turn run with
 *    tools starts and, after a random delay (seeded: the seed is printed, KEEL_FAULTS_SEED
 *    replays it), one of the two workers, picked at random, is SIGKILLed and replaced. The
 *    runs overlap, so each kill also lands in the middle of the earlier runs still going.
 *    Every run completes with its own answer, and a tool call whose completion Temporal had
 *    recorded never runs again: only an attempt that was running in a killed worker is
 *    followed by another attempt of the same call (same idempotency key).
 * 2. A dev server of its own (SQLite file) is stopped half-way through 30 concurrent runs
 *    and started again on the same port and file: every run completes with its answer.
 * 3. A deploy that changes workflow code: runs held for approval on a worker with
 *    middleware `pacing` v1 (test/fixtures/patched-v1.ts); the worker drains (SIGTERM), a
 *    worker with v2 (patched-v2.ts: a durable timer before each model call, behind
 *    `patched()`) takes over; the held runs complete on the v1 path without nondeterminism,
 *    a run started after the deploy takes the v2 path, and the same change made without the
 *    patch (unpatched-v2.ts) fails to replay a v1 run's history. Then runs started on v2 (their
 *    status polled from the start, as `keel run` does) wait for approval while the v2 worker
 *    restarts: they must complete, and their histories must replay with v2.
 */
import type { temporal } from '@temporalio/proto';
import { DefaultLogger, Runtime, Worker, makeTelemetryFilterString } from '@temporalio/worker';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { KeelClient, type RunHandle } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import type { Hold, RunResult } from '../src/core/run';
import { defineAgent, defineTool } from '../src/define';
import { Registry } from '../src/registry';
import { startDevServer, type DevServer } from '../src/server/dev-server';
import { workflowBundlePath } from '../src/worker/bundle';
import { deployModel, expectedAnswer, expectedDeployAnswer, faultModel, faultStep } from './fixtures/fault-agents';
import { PACING_NOTICE, PACING_PATCH } from './fixtures/patched-v2';
import { freePort } from './support/free-port';
import { startTestWorker } from './support/harness';
import { ROOT, killAfterEach, spawnKeel, writeTestConfig, type KeelProcess } from './support/processes';

const track = killAfterEach(afterEach);

// The in-process worker of the restart test retries every call while the server is down, and
// the unpatched replay fails on purpose: keep the SDK's warnings about that off the console
// (errors are still printed). Installed before the harness would install its own.
Runtime.install({
  logger: new DefaultLogger('ERROR'),
  telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR', other: 'ERROR' }) } },
});

const FIXTURES = join(ROOT, 'test', 'fixtures');
const FAULT_AGENTS = join(FIXTURES, 'fault-agents.ts');
const READY = /keel: worker \d+ on task queue/;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** mulberry32: a small seeded PRNG, so a failing schedule can be replayed. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Settled = { ok: true; result: RunResult } | { ok: false; error: unknown };

/** A run's result, never rejecting (so a run can be awaited long after it was started). */
function settle(handle: RunHandle): Promise<Settled> {
  return handle.result().then(
    (result): Settled => ({ ok: true, result }),
    (error: unknown): Settled => ({ ok: false, error }),
  );
}

/** What Temporal says about a run that has not ended: its status and its failed workflow tasks. */
async function describeOpenRun(client: KeelClient, runId: string): Promise<string> {
  const handle = client.temporal.workflow.getHandle(runId);
  const [description, history] = await Promise.all([handle.describe(), handle.fetchHistory()]);
  const failures = (history.events ?? [])
    .map((event) => event.workflowTaskFailedEventAttributes)
    .filter((failed) => !!failed)
    .map((failed) => `workflow task failed (cause ${String(failed.cause)}): ${failed.failure?.message ?? '?'}`);
  return `${runId}: ${description.status.name}, ${history.events?.length ?? 0} events${failures.length ? `; ${[...new Set(failures)].join('; ')}` : ''}`;
}

/** Waits at most `ms` for `outcomes`; past that, fails naming each run still open and what its history says. */
async function settledWithin(client: KeelClient, runs: Array<{ handle: RunHandle; outcome: Promise<Settled> }>, ms: number): Promise<Settled[]> {
  const done = new Set<number>();
  runs.forEach((run, index) => void run.outcome.then(() => done.add(index)));
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  const all = Promise.all(runs.map((run) => run.outcome));
  const first = await Promise.race([all, deadline]);
  clearTimeout(timer);
  if (first !== 'late') return first;
  const open = runs.filter((_run, index) => !done.has(index));
  const details = await Promise.all(
    open.map((run) => describeOpenRun(client, run.handle.runId).catch((error: unknown) => `${run.handle.runId}: ${String(error)}`)),
  );
  throw new Error(`${open.length} of ${runs.length} runs did not end within ${ms} ms:\n${details.join('\n')}`);
}

/** The text of a settled run, or a description of its failure (so a failure names the run). */
function textOf(runId: string, settled: Settled): string {
  if (settled.ok) return settled.result.text;
  const error = settled.error as { status?: string; message?: string };
  return `run ${runId} failed: ${error.status ?? ''} ${error.message ?? String(settled.error)}`;
}

/** One activity of a run's history. */
interface ActivityRecord {
  activityId: string;
  type: string;
  /** The attempt whose start the history records (the last one). */
  attempt: number | undefined;
  /** Pid of the worker that completed it (its identity is `<pid>@<host>`). */
  completedBy: string | undefined;
}

/** Events of a run's history, and its activities in the order they were scheduled. */
async function historyOf(client: KeelClient, runId: string) {
  const handle = client.temporal.workflow.getHandle(runId);
  const events = (await handle.fetchHistory()).events ?? [];
  const { runId: execution } = await handle.describe();
  const byScheduled = new Map<string, ActivityRecord>();
  for (const event of events) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled)
      byScheduled.set(String(event.eventId), {
        activityId: scheduled.activityId!,
        type: scheduled.activityType!.name!,
        attempt: undefined,
        completedBy: undefined,
      });
    const started = event.activityTaskStartedEventAttributes;
    if (started) byScheduled.get(String(started.scheduledEventId))!.attempt = started.attempt ?? undefined;
    const completed = event.activityTaskCompletedEventAttributes;
    if (completed) byScheduled.get(String(completed.scheduledEventId))!.completedBy = completed.identity?.split('@')[0];
  }
  return { events, execution, activities: [...byScheduled.values()] };
}

/** One execution of `fault_step` in a worker process, from tools.log. */
interface Execution {
  pid: string;
  attempt: number;
  step: string;
  ended: boolean;
}

/** tools.log by idempotency key: each execution (start line), and whether it logged its end. */
function executionsByKey(dir: string): Map<string, Execution[]> {
  const file = join(dir, 'tools.log');
  const byKey = new Map<string, Execution[]>();
  if (!existsSync(file)) return byKey;
  for (const line of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
    const [what, pid, attempt, key, step] = line.split(' ') as [string, string, string, string, string];
    const executions = byKey.get(key) ?? [];
    byKey.set(key, executions);
    if (what === 'start') executions.push({ pid, attempt: Number(attempt), step, ended: false });
    else {
      const execution = executions.find((candidate) => candidate.pid === pid && candidate.attempt === Number(attempt));
      if (execution) execution.ended = true;
    }
  }
  return byKey;
}

/** The activities a four-turn `faults` run schedules, in order (the agent lookup first). */
const FAULT_RUN_ACTIVITIES = ['resolveAgent', 'callModel', 'callTool', 'callTool', 'callModel', 'callTool', 'callModel', 'callTool', 'callModel'];

type HistoryEvent = NonNullable<temporal.api.history.v1.IHistory['events']>[number];
/** The pacing middleware's 10 ms timer (keel's own 1 ms task-boundary timer is not one). */
const isPacingTimer = (event: HistoryEvent) => {
  const timeout = event.timerStartedEventAttributes?.startToFireTimeout;
  return timeout !== undefined && timeout !== null && Number(timeout.seconds ?? 0) * 1000 + (timeout.nanos ?? 0) / 1e6 === 10;
};
/** The patch marker of the pacing change (keel records patch markers of its own). */
const isPacingPatch = (event: HistoryEvent) =>
  event.markerRecordedEventAttributes?.markerName === 'core_patch' &&
  Object.values(event.markerRecordedEventAttributes.details ?? {}).some((payloads: temporal.api.common.v1.IPayloads) =>
    (payloads.payloads ?? []).some((payload) =>
      Buffer.from(payload.data ?? [])
        .toString()
        .includes(PACING_PATCH),
    ),
  );

describe('faults', () => {
  it('20 trials of SIGKILL of one of two workers at a random moment of a multi-turn run with tools: every run completes with the right answer and no completed tool call runs again', async () => {
    const seed = process.env.KEEL_FAULTS_SEED ? Number(process.env.KEEL_FAULTS_SEED) : Math.floor(Math.random() * 2 ** 31);
    console.log(`faults: SIGKILL schedule seed ${seed} (KEEL_FAULTS_SEED=${seed} replays it)`);
    const random = prng(seed);
    // Each run: turn 1 a (0.3 s) and b (1.5 s) at once, turn 2 c (1 s), turn 3 d (0.3 s), turn 4 the answer.
    // Short heartbeat timeouts: a call on a killed worker is retried within about 2 s.
    const { dir, configPath } = writeTestConfig('faults-kill', {
      activities: {
        model: { heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' } },
        tool: { startToCloseTimeout: '1 minute', heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' } },
      },
      modules: [FAULT_AGENTS],
    });
    const env = { KEEL_TEST_DIR: dir };
    const startWorker = (): KeelProcess => track(spawnKeel(['worker', '--config', configPath], { env }));
    const workers = [startWorker(), startWorker()];
    const client = await KeelClient.connect(loadConfig({ path: configPath }));
    try {
      const runs: Array<{ p: number; handle: RunHandle; outcome: Promise<Settled>; ended: boolean }> = [];
      const kills: Array<{ trial: number; pid: string; delayMs: number; runEnded: boolean; openRuns: number }> = [];
      for (let trial = 0; trial < 20; trial++) {
        await Promise.all(workers.map((worker) => worker.waitFor(READY, 120_000)));
        const p = trial + 1;
        const handle = await client.start('faults', String(p));
        const run = { p, handle, outcome: settle(handle), ended: false };
        void run.outcome.then(() => (run.ended = true));
        runs.push(run);
        // Under 2.8 s, the time the run's tool calls take one after another: the run is in flight.
        const delayMs = Math.floor(random() * 2500);
        await sleep(delayMs);
        const index = random() < 0.5 ? 0 : 1;
        const victim = workers[index]!;
        kills.push({ trial, pid: String(victim.child.pid), delayMs, runEnded: run.ended, openRuns: runs.filter((candidate) => !candidate.ended).length });
        victim.kill('SIGKILL');
        await victim.exited;
        workers[index] = startWorker();
      }
      const settled = await settledWithin(client, runs, 90_000);

      expect(kills).toHaveLength(20);
      expect(
        kills.filter((kill) => kill.runEnded),
        'each kill lands while the run started before it is in flight',
      ).toEqual([]);
      expect(runs.map((run, index) => textOf(run.handle.runId, settled[index]!))).toEqual(runs.map((run) => expectedAnswer(run.p)));

      // Each tool call, matched by its idempotency key (<runId>/<temporal run id>/<activityId>) with the history.
      const killedPids = new Set(kills.map((kill) => kill.pid));
      const executions = executionsByKey(dir);
      const violations: string[] = [];
      let ranAgain = 0;
      const executionsOfRuns: string[] = [];
      for (const run of runs) {
        const { activities, execution } = await historyOf(client, run.handle.runId);
        executionsOfRuns.push(`${run.handle.runId}/${execution}`);
        if (activities.map((activity) => activity.type).join() !== FAULT_RUN_ACTIVITIES.join()) {
          violations.push(`${run.handle.runId}: scheduled ${activities.map((activity) => activity.type).join(', ')}`);
        }
        for (const call of activities.filter((activity) => activity.type === 'callTool')) {
          const key = `${run.handle.runId}/${execution}/${call.activityId}`;
          const ran = executions.get(key) ?? [];
          const attempts = ran.map((execution) => execution.attempt);
          const last = ran.filter((execution) => execution.attempt === call.attempt);
          if (new Set(attempts).size !== attempts.length) violations.push(`${key}: an attempt ran twice: ${JSON.stringify(ran)}`);
          if (last.length !== 1 || last[0]!.pid !== call.completedBy) {
            violations.push(`${key}: attempt ${call.attempt} completed by pid ${call.completedBy}, but the tool logged ${JSON.stringify(ran)}`);
          }
          for (const execution of ran.filter((candidate) => candidate.attempt !== call.attempt)) {
            if (execution.attempt > (call.attempt ?? 0))
              violations.push(`${key}: ran again (attempt ${execution.attempt}, pid ${execution.pid}) after attempt ${call.attempt} had completed`);
            else if (!killedPids.has(execution.pid))
              violations.push(`${key}: attempt ${execution.attempt} in pid ${execution.pid}, never killed, was run again`);
            else ranAgain++;
          }
        }
      }
      const runKeys = new Set(executionsOfRuns);
      for (const key of executions.keys()) {
        if (!runKeys.has(key.slice(0, key.lastIndexOf('/')))) violations.push(`${key}: logged by the tool but belongs to no run of this test`);
      }
      console.log(
        `faults: ${kills.length} SIGKILLs (delays ${kills.map((kill) => kill.delayMs).join(', ')} ms; open runs at each: ${kills.map((kill) => kill.openRuns).join(', ')}); ` +
          `${ranAgain} tool attempts were cut short by a kill and ran again elsewhere`,
      );
      expect(violations).toEqual([]);
      expect(ranAgain, 'some kill caught a tool call in flight (else the test proved nothing about retries)').toBeGreaterThan(0);
    } finally {
      await client.close();
    }
    // About 120 s on an idle 2-core machine, most of it 20 worker starts; a busy one took over 170 s.
  }, 300_000);

  describe('with a dev server of its own', () => {
    let server: DevServer | undefined;
    afterAll(async () => {
      await server?.stop();
    });

    it('the dev server restarted mid-run under load: all runs complete', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'keel-faults-restart-'));
      const port = await freePort();
      const options = { binary: inject('temporalBinary'), port, headless: true, dbFile: join(dir, 'temporal.db'), logLevel: 'error' };
      server = await startDevServer(options);

      let started = 0;
      const step = defineTool({
        ...faultStep,
        run: (input, context) => {
          started++;
          return faultStep.run(input, context);
        },
      });
      const model = faultModel('scripted/faults-restart', { a: 50, b: 400, c: 300, d: 100 });
      const registry = new Registry().add(step, model, defineAgent({ name: 'faults-restart', model: model.name, tools: [step], maxTurns: 8 }));
      const worker = await startTestWorker(registry, {
        temporal: { address: server.address },
        activities: {
          model: { heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' } },
          tool: { startToCloseTimeout: '1 minute', heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' } },
        },
      });
      try {
        const prompts = Array.from({ length: 30 }, (_unused, index) => 100 + index);
        const handles = await Promise.all(prompts.map((p) => worker.client.start('faults-restart', String(p))));
        // 4 tool calls a run, 120 in all: stop the server once half of them have started.
        await expect.poll(() => started, { timeout: 60_000, interval: 20 }).toBeGreaterThanOrEqual(60);
        await server.stop();
        const startedWhileUp = started;
        await sleep(1000);
        server = await startDevServer(options);
        const runs = handles.map((handle) => ({ handle, outcome: settle(handle) }));
        const settled = await settledWithin(worker.client, runs, 75_000);
        expect(handles.map((handle, index) => textOf(handle.runId, settled[index]!))).toEqual(prompts.map((p) => expectedAnswer(p)));
        expect(startedWhileUp, 'the server stopped before every tool call had started').toBeLessThan(120);
        expect(started, 'tool calls ran after the restart').toBeGreaterThan(startedWhileUp);
        console.log(`faults: server restarted after ${startedWhileUp} of 120 tool calls had started; ${started} executions in all`);
      } finally {
        await worker.stop();
      }
    }, 120_000);
  });

  it('a worker deployed with a changed but patched workflow while runs are in flight: they complete', async () => {
    const [v1, v2, unpatched] = ['patched-v1.ts', 'patched-v2.ts', 'unpatched-v2.ts'].map((file) => join(FIXTURES, file)) as [string, string, string];
    // Built here (or taken from the cache) so the worker processes find them and start in seconds.
    const bundles = {
      v1: await workflowBundlePath({ middlewareModules: [v1] }),
      v2: await workflowBundlePath({ middlewareModules: [v2] }),
      unpatched: await workflowBundlePath({ middlewareModules: [unpatched] }),
    };
    const replay = (bundle: string, runId: string) =>
      client.temporal.workflow
        .getHandle(runId)
        .fetchHistory()
        .then((history) => Worker.runReplayHistory({ workflowBundle: { codePath: bundle } }, history, runId));

    // turn 1: fault_step a (allowed); turn 2: fault_confirm, held by toolApproval until approved; turn 3: the answer
    const fields = (middleware: string) => ({
      worker: { shutdownGraceTime: '5 seconds' },
      activities: { tool: { heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' } } },
      modules: [FAULT_AGENTS],
      middlewareModules: [middleware],
      agents: [
        {
          name: 'deploy',
          description: 'Confirms a number.',
          model: deployModel.name,
          tools: ['fault_step', 'fault_confirm'],
          use: [{ name: 'pacing' }, { name: 'toolApproval', config: { allowedTools: ['fault_step'] } }],
        },
      ],
    });
    const first = writeTestConfig('faults-deploy-v1', fields(v1));
    const second = writeTestConfig('faults-deploy-v2', { ...fields(v2), taskQueue: first.taskQueue });
    const env = { KEEL_TEST_DIR: first.dir };
    const startV2 = async () => {
      const worker = track(spawnKeel(['worker', '--config', second.configPath], { env }));
      await worker.waitFor(READY, 120_000);
      return worker;
    };
    /** Starts a run of `deploy` and waits (polling its status from the start, as `keel run` does) until it is held. */
    const startHeld = async (p: number) => {
      const handle = await client.start('deploy', String(p));
      let pending: Hold[] = [];
      await expect
        .poll(async () => (pending = await handle.pendingHolds()).map((interrupt) => interrupt.toolName), { timeout: 30_000, interval: 100 })
        .toEqual(['fault_confirm']);
      return { p, handle, interruptId: pending[0]!.id };
    };
    /** Approves the held call (a signal: it does not wait for a worker) and waits for the result. */
    const approveAndSettle = ({ handle, interruptId }: { handle: RunHandle; interruptId: string }) => ({
      handle,
      outcome: handle.signalDecision({ interruptId, approved: true }).then(
        () => settle(handle),
        (error: unknown): Settled => ({ ok: false, error }),
      ),
    });

    const oldWorker = track(spawnKeel(['worker', '--config', first.configPath], { env }));
    await oldWorker.waitFor(READY, 120_000);
    const client = await KeelClient.connect(loadConfig({ path: first.configPath }));
    try {
      // 1. Runs held on v1; the deploy (v1 drains and exits, v2 takes the queue); the runs are approved and complete on v2.
      const held = await Promise.all([1, 2, 3].map(startHeld));
      oldWorker.kill('SIGTERM');
      expect(await oldWorker.exited).toBe(0);
      let worker = await startV2();
      const settled = await settledWithin(client, held.map(approveAndSettle), 60_000);
      expect(held.map(({ handle }, index) => textOf(handle.runId, settled[index]!))).toEqual(held.map(({ p }) => expectedDeployAnswer(p)));
      for (const [index, { handle }] of held.entries()) {
        const { events } = await historyOf(client, handle.runId);
        expect(
          events.filter((event) => event.workflowTaskFailedEventAttributes).map((event) => event.workflowTaskFailedEventAttributes!.failure?.message),
          `${handle.runId}: no failed workflow task`,
        ).toEqual([]);
        // Started on v1, so the v1 path to the end: no timers, no patch marker, the v1 system prompt.
        expect(
          events.filter((event) => isPacingTimer(event) || isPacingPatch(event)),
          `${handle.runId}: no pacing timer, no pacing patch`,
        ).toEqual([]);
        expect(JSON.stringify((settled[index] as { result: RunResult }).result.messages[0])).not.toContain(PACING_NOTICE);
      }

      // 2. A run started after the deploy takes the v2 path: the system prompt says so, a timer before each of its 3 model calls.
      const fresh = await startHeld(7);
      const [freshOutcome] = await settledWithin(client, [approveAndSettle(fresh)], 60_000);
      expect(textOf(fresh.handle.runId, freshOutcome!)).toBe(expectedDeployAnswer(7));
      expect((freshOutcome as { result: RunResult }).result.messages[0]).toMatchObject({
        role: 'system',
        content: [{ text: expect.stringContaining(PACING_NOTICE) as unknown }],
      });
      const freshEvents = (await historyOf(client, fresh.handle.runId)).events;
      expect(freshEvents.filter(isPacingTimer)).toHaveLength(3);
      expect(freshEvents.filter(isPacingPatch)).toHaveLength(1);

      // 3. Replay of a run started on v1: fine with v1 and with the patched v2; the same change without the patch breaks it.
      const old = held[0]!.handle.runId;
      await replay(bundles.v1, old);
      await replay(bundles.v2, old);
      await expect(replay(bundles.unpatched, old)).rejects.toMatchObject({
        name: 'DeterminismViolationError',
        message: expect.stringContaining('Nondeterminism') as unknown,
      });

      // 4. Runs started on v2 must replay on v2 too: while they wait for approval the v2 worker
      //    restarts (a later deploy, a crash), and the new process picks them up from their histories.
      const waiting = await Promise.all(Array.from({ length: 16 }, (_unused, index) => startHeld(20 + index)));
      const replayFailures: string[] = [];
      for (const { handle } of waiting) {
        await replay(bundles.v2, handle.runId).catch((error: unknown) => replayFailures.push(`${handle.runId}: ${(error as Error).message}`));
      }
      worker.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
      worker = await startV2();
      let stuck: string | undefined;
      const outcomes = await settledWithin(client, waiting.map(approveAndSettle), 30_000).catch((error: unknown) => {
        stuck = (error as Error).message;
        return undefined;
      });
      expect({ stuck, replayFailures }, 'runs started on the patched v2 complete after a restart of the v2 worker, and their histories replay with v2').toEqual(
        { stuck: undefined, replayFailures: [] },
      );
      expect(waiting.map(({ handle }, index) => textOf(handle.runId, outcomes![index]!))).toEqual(waiting.map(({ p }) => expectedDeployAnswer(p)));
    } finally {
      await client.close();
    }
  }, 170_000);
});
