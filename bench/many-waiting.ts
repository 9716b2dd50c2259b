/**
 * bench/many-waiting: many runs waiting for people on one worker, and what bringing them back
 * costs. Not a test: prints figures, asserts nothing.
 *
 * 1. Waiting: RUNS (default 10,000) runs of `waiting` (bench/waiting-agents.ts) started against
 *    one `keel worker` child process (its RSS is its own, from /proc) whose sticky cache holds
 *    `worker.maxCachedWorkflows` runs (BENCH_WAIT_CACHE, default: keel's default), each held by
 *    ToolApproval at its first tool call, until visibility counts them all waiting. The worker's
 *    RSS is sampled every second (goal ≤ 1 GiB), with the dev server's RSS and the CPU both spent.
 * 2. Approving: one client approves every hold, APPROVERS at a time (a steady stream of people
 *    deciding, default 20), each timed from sending the decision to the run's completion (goal:
 *    p95 ≤ 2 s). Most runs were evicted from the cache, so each decision replays its run first.
 * 3. Replay: keel histories of about 1,000 and 10,000 events (10,000 is where a run continues as
 *    new by default, so no run's history is longer) and a bare workflow's of about 1,000 events,
 *    replayed interleaved by one replay worker, median of REPLAYS after the first (goal for
 *    1,000 events: ≤ 150 ms), and keel's time per event over the bare workflow's, round by
 *    round (goal ≤ 1.2).
 *
 * Run: npx tsx bench/many-waiting.ts   (env: BENCH_WAIT_RUNS, BENCH_WAIT_CACHE, BENCH_WAIT_APPROVERS, BENCH_WAIT_REPLAYS)
 */
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { stringify } from 'yaml';
import { listHolds } from '../src/client/holds';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { DEFAULT_MAX_CACHED_WORKFLOWS } from '../src/config/schema';
import { historyFromJSON, historyToJSON } from '../src/node/history-json';
import { cpuMsOf, percentile, rssOf, sleep, startBenchServer, untilWaiting } from './harness';
import { median, result } from './report';
import { keelBundleOptions } from '../src/worker/bundle';

const RUNS = Number(process.env.BENCH_WAIT_RUNS ?? 10_000);
const CACHE = process.env.BENCH_WAIT_CACHE ? Number(process.env.BENCH_WAIT_CACHE) : undefined;
const APPROVERS = Number(process.env.BENCH_WAIT_APPROVERS ?? 20);
const REPLAYS = Number(process.env.BENCH_WAIT_REPLAYS ?? 7);
/** Runs started at once while filling. */
const START_CONCURRENCY = 50;
const ROOT = resolve(__dirname, '..');
const MiB = (bytes: number | undefined) => (bytes === undefined ? NaN : bytes / 2 ** 20);

/** Starts `keel worker --config <path>` and waits for it to poll; its pid and how to stop it. */
async function startWorkerChild(configPath: string) {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'keel.cjs'), 'worker', '--config', configPath], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  await new Promise<void>((ready, failed) => {
    // keel says what it does on stderr: shown here, and the line that says it polls is the cue.
    createInterface({ input: child.stderr }).on('line', (line) => {
      process.stderr.write(`${line}\n`);
      if (/keel: worker \d+ on task queue/.test(line)) ready();
    });
    child.once('exit', (code) => failed(new Error(`the worker exited (${code}) before it polled`)));
  });
  return {
    pid: child.pid!,
    async stop(): Promise<void> {
      child.kill('SIGTERM');
      await new Promise((done) => child.once('exit', done));
    },
  };
}

/** Samples a process's RSS every second: the largest seen since the last `take`. */
function rssSampler(pid: number) {
  let largest = 0;
  const timer = setInterval(() => (largest = Math.max(largest, rssOf(pid) ?? 0)), 1000);
  return {
    take(): number {
      const seen = Math.max(largest, rssOf(pid) ?? 0);
      largest = 0;
      return seen;
    },
    stop: () => clearInterval(timer),
  };
}

async function main(): Promise<void> {
  const server = await startBenchServer();
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-waiting-'));
  const configPath = join(dir, 'temporal.yaml');
  writeFileSync(
    configPath,
    stringify({
      temporal: { address: server.address },
      taskQueue: 'bench-waiting',
      server: { enabled: false },
      externalStorage: { directory: join(dir, 'payloads') },
      modules: [join(__dirname, 'waiting-agents.ts')],
      ...(CACHE !== undefined ? { worker: { maxCachedWorkflows: CACHE } } : {}),
    }),
  );
  const config = loadConfig({ path: configPath });
  const worker = await startWorkerChild(configPath);
  const client = await KeelClient.connect(config);
  const rss = rssSampler(worker.pid);
  const serverPid = server.process.pid!;
  const cache = CACHE ?? DEFAULT_MAX_CACHED_WORKFLOWS;
  try {
    // 1. RUNS runs, each held at its first tool call.
    const cpuBefore = { worker: cpuMsOf(worker.pid) ?? 0, server: cpuMsOf(serverPid) ?? 0 };
    const filling = performance.now();
    let started = 0;
    await Promise.all(
      Array.from({ length: START_CONCURRENCY }, async () => {
        while (started < RUNS) {
          const index = started++;
          await client.start('waiting', 'pay', { runId: `waiting-${index}` });
        }
      }),
    );
    await untilWaiting(client.temporal, RUNS, 60 * 60_000);
    const fillS = (performance.now() - filling) / 1000;
    await sleep(5000);
    const fillPeak = rss.take();
    const waitingRss = rssOf(worker.pid);
    const cpu = { worker: (cpuMsOf(worker.pid) ?? 0) - cpuBefore.worker, server: (cpuMsOf(serverPid) ?? 0) - cpuBefore.server };
    console.log(
      `waiting: ${RUNS} runs held on one worker (cache ${cache}) after ${fillS.toFixed(0)} s (${(RUNS / fillS).toFixed(1)} runs/s); worker RSS ${MiB(waitingRss).toFixed(0)} MiB (peak ${MiB(fillPeak).toFixed(0)}), dev server RSS ${MiB(rssOf(serverPid)).toFixed(0)} MiB; CPU: worker ${(cpu.worker / 1000).toFixed(0)} s, dev server ${(cpu.server / 1000).toFixed(0)} s`,
    );
    result(`many waiting: worker RSS, ${RUNS} runs waiting on ToolApproval, cache ${cache} (MiB, peak)`, MiB(fillPeak), '≤ 1024', MiB(fillPeak) <= 1024);
    result(`many waiting: dev server RSS with ${RUNS} runs waiting (MiB)`, MiB(rssOf(serverPid)), '');
    result('many waiting: CPU to start them, worker / dev server (ms per run)', cpu.worker / RUNS, `dev server ${(cpu.server / RUNS).toFixed(1)}`);

    // 2. Approve every hold, APPROVERS at a time; decision sent → run completed.
    const holds = await listHolds(client.temporal);
    console.log(`approving: ${holds.length} holds listed`);
    const latencies: number[] = [];
    const approving = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: APPROVERS }, async () => {
        while (next < holds.length) {
          const hold = holds[next++]!;
          const handle = client.getHandle(hold.runId);
          const sent = performance.now();
          await handle.approve(hold.id);
          await handle.result();
          latencies.push(performance.now() - sent);
        }
      }),
    );
    const approveS = (performance.now() - approving) / 1000;
    const approvePeak = rss.take();
    // Visibility lags the completions by a moment.
    let completed = 0;
    for (let tries = 0; tries < 30 && completed < RUNS; tries++) {
      if (tries) await sleep(1000);
      completed = (await client.temporal.workflow.count(`ExecutionStatus='Completed' AND WorkflowId STARTS_WITH 'waiting-'`)).count;
    }
    const p95 = percentile(latencies, 95);
    console.log(
      `approving: ${latencies.length} decisions in ${approveS.toFixed(0)} s (${(latencies.length / approveS).toFixed(1)}/s), decision → completion p50 ${percentile(latencies, 50).toFixed(0)} ms, p95 ${p95.toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms; ${completed} completed; worker RSS peak ${MiB(approvePeak).toFixed(0)} MiB`,
    );
    result(`many waiting: runs completed after approving all ${RUNS}`, completed, `${RUNS}`, completed === RUNS);
    result(`many waiting: decision → completion p95, ${APPROVERS} approvers (ms)`, p95, '≤ 2000', p95 <= 2000);
    result('many waiting: decision → completion p50 (ms)', percentile(latencies, 50), '');
    result('many waiting: worker RSS while approving (MiB, peak)', MiB(approvePeak), '≤ 1024', MiB(approvePeak) <= 1024);

    // 3. Replay time by history length, one replay worker (the first replay also creates it),
    // against a bare workflow's history of as many events (bench/baseline-workflow.ts) in the same replays.
    const { code } = await bundleWorkflowCode(keelBundleOptions(join(__dirname, 'workflows.ts')));
    const baseline = await Worker.create({
      connection: await NativeConnection.connect({ address: server.address }),
      taskQueue: 'bench-baseline',
      workflowBundle: { code },
      activities: { bareModel: async (turn: number) => ({ turn }), bareTool: async () => ({ ok: true }) },
    });
    const baselineRunning = baseline.run();
    const longest = async (workflowId: string) => {
      // The chain's largest run: a long run continues as new, and its first runs are the longest.
      let best: { runId: string; events: number } | undefined;
      for await (const execution of client.temporal.workflow.list({ query: `WorkflowId='${workflowId}'` })) {
        if (!best || execution.historyLength > best.events) best = { runId: execution.runId, events: execution.historyLength };
      }
      return client.temporal.workflow.getHandle(workflowId, best!.runId).fetchHistory();
    };
    const keel80 = await client.start('long', '80', { runId: 'long-80' });
    await keel80.result();
    await client.temporal.workflow.execute('baselineWorkflow', { taskQueue: 'bench-baseline', workflowId: 'bare-80', args: [80] });
    const keel800 = await client.start('long', '800', { runId: 'long-800', continueAsNewAt: { historyEvents: 10_000 } });
    await keel800.result();
    baseline.shutdown();
    await baselineRunning;
    const cases = [
      { label: 'keel', workflowId: 'long-80', history: await longest('long-80') },
      { label: 'bare workflow', workflowId: 'bare-80', history: await longest('bare-80') },
      { label: 'keel', workflowId: 'long-800', history: await longest('long-800') },
    ].map((entry) => ({ ...entry, events: entry.history.events?.length ?? 0, json: historyToJSON(entry.history), times: [] as number[] }));
    let mark = 0;
    let current = cases[0]!;
    // Interleaved: each round replays every case once; each replay of its own copy (the SDK takes the history it is given).
    const histories = (async function* () {
      for (let round = 0; round <= REPLAYS; round++) {
        for (const entry of cases) {
          current = entry;
          mark = performance.now();
          yield { workflowId: entry.workflowId, history: historyFromJSON(JSON.parse(entry.json)) };
        }
      }
    })();
    for await (const outcome of Worker.runReplayHistories({ workflowBundle: { code } }, histories)) {
      if (outcome.error) throw outcome.error;
      current.times.push(performance.now() - mark);
    }
    for (const entry of cases) {
      const [first, ...rest] = entry.times;
      console.log(
        `replay: ${entry.label}, ${entry.events} events: first ${first!.toFixed(0)} ms, then median ${median(rest).toFixed(1)} ms (${rest.map((v) => v.toFixed(0)).join(', ')})`,
      );
    }
    const [keel1k, bare1k, keel10k] = cases.map((entry) => median(entry.times.slice(1))) as [number, number, number];
    result(`replay: keel, a ${cases[0]!.events}-event history (ms, median)`, keel1k, '≤ 150', keel1k <= 150);
    result(`replay: bare workflow, a ${cases[1]!.events}-event history (ms, median)`, bare1k, '');
    // Per event, paired round by round (each round replays both histories one after the other).
    const perEvent = cases[0]!.events / cases[1]!.events;
    const paired = median(cases[0]!.times.slice(1).map((time, round) => time / (cases[1]!.times[round + 1]! * perEvent)));
    result('replay: keel / bare workflow, per event, paired by round (median)', paired, '≤ 1.2', paired <= 1.2);
    result(`replay: keel, a ${cases[2]!.events}-event history, the continue-as-new bound (ms, median)`, keel10k, 'bounded');
  } finally {
    rss.stop();
    await client.close();
    await worker.stop();
    await server.stop();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
