/**
 * bench/cached-memory: what one waiting run held in a worker's sticky cache costs in memory,
 * keel against a bare workflow, measured side by side. Not a test: prints figures, asserts
 * nothing.
 *
 * Two worker child processes of this same file, alike in everything (the bench bundle with
 * keel's bundle options, keel's activities and the bare ones, a cache of RUNS + 100): one holds
 * keel runs waiting on ToolApproval (`waiting`, bench/waiting-agents.ts), the other bare
 * workflows of the same shape waiting on a signal (`bareWaitingWorkflow`,
 * bench/baseline-workflow.ts). They fill in STEPS alternating steps, so both see the same load;
 * after each step both children's RSS is read (median of 5 readings a second apart). Memory per
 * cached run is the slope of RSS over runs held across the steps (least squares), per side; the goal is keel's
 * at most 1.5 times the bare workflow's.
 *
 * Run: npx tsx bench/cached-memory.ts   (env: BENCH_CACHED_RUNS, default 2000 per side; BENCH_CACHED_STEPS, default 4)
 */
import { DefaultLogger, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { createActivities } from '../src/worker/create-activities';
import { KeelClient } from '../src/client/keel-client';
import { defineConfig } from '../src/config/load';
import { KEEL_STATUS } from '../src/core/search-attributes';
import { Registry } from '../src/registry';
import { connectClient, connectWorker } from '../src/worker/connect';
import { keelBundleOptions } from '../src/worker/bundle';
import { WAITING, historyBytes, rssOf, sleep, startBenchServer } from './harness';
import { median, result } from './report';
import { transfer, waiting, waitingModel } from './waiting-agents';

const RUNS = Number(process.env.BENCH_CACHED_RUNS ?? 2000);
const STEPS = Number(process.env.BENCH_CACHED_STEPS ?? 4);
const START_CONCURRENCY = 50;
const ROOT = resolve(__dirname, '..');
const MiB = (bytes: number) => bytes / 2 ** 20;
const BARE_WAITING = `WorkflowType='bareWaitingWorkflow' AND ExecutionStatus='Running' AND ${KEEL_STATUS.name}='waiting'`;

/** The child: one worker on the task queue it is given, polling until stdin closes. */
async function child(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const config = defineConfig({ temporal: { address: process.env.BENCH_CACHED_ADDRESS! }, taskQueue: process.env.BENCH_CACHED_TASK_QUEUE! });
  const registry = new Registry().add(transfer, waitingModel, waiting);
  const { code } = await bundleWorkflowCode(keelBundleOptions(join(__dirname, 'workflows.ts')));
  const client = await connectClient(config);
  const worker = await Worker.create({
    connection: await connectWorker(config),
    taskQueue: config.taskQueue,
    workflowBundle: { code },
    maxCachedWorkflows: RUNS + 100,
    activities: {
      ...createActivities({ registry, config, client }),
      bareModel: async (turn: number) => ({ turn }),
      bareTool: async () => ({ ok: true }),
    },
  });
  const running = worker.run();
  process.stdout.write('ready\n');
  createInterface({ input: process.stdin }).on('close', () => worker.shutdown());
  await running;
  process.exit(0);
}

/** Starts a worker child on `taskQueue`; its pid and how to stop it. */
async function startChild(address: string, taskQueue: string) {
  const worker = spawn(process.execPath, ['--import', 'tsx', __filename, 'child'], {
    cwd: ROOT,
    env: { ...process.env, BENCH_CACHED_ADDRESS: address, BENCH_CACHED_TASK_QUEUE: taskQueue },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((done) => worker.once('exit', () => done()));
  const ready = new Promise<void>((done) => createInterface({ input: worker.stdout }).on('line', (line) => line === 'ready' && done()));
  await Promise.race([ready, exited.then(() => Promise.reject(new Error(`the ${taskQueue} worker exited before it polled`)))]);
  return {
    pid: worker.pid!,
    async stop(): Promise<void> {
      worker.stdin.end();
      await Promise.race([exited, sleep(30_000).then(() => worker.kill('SIGKILL'))]);
    },
  };
}

/** Starts `count` runs with `start`, START_CONCURRENCY at a time, then waits until `query` counts `total`. */
async function fill(client: Client, count: number, total: number, query: string, start: () => Promise<unknown>): Promise<void> {
  let started = 0;
  await Promise.all(
    Array.from({ length: START_CONCURRENCY }, async () => {
      while (started < count) {
        started++;
        await start();
      }
    }),
  );
  const deadline = Date.now() + 15 * 60_000;
  while ((await client.workflow.count(query)).count < total) {
    if (Date.now() > deadline) throw new Error(`fewer than ${total} runs waiting after 15 minutes (${query})`);
    await sleep(500);
  }
}

/** Median of 5 RSS readings of `pid`, a second apart. */
async function settledRss(pid: number): Promise<number> {
  const readings: number[] = [];
  for (let reading = 0; reading < 5; reading++) {
    if (reading) await sleep(1000);
    readings.push(rssOf(pid) ?? NaN);
  }
  return median(readings);
}

/** Least-squares slope of y over x. */
function slope(x: number[], y: number[]): number {
  const mx = x.reduce((a, b) => a + b, 0) / x.length;
  const my = y.reduce((a, b) => a + b, 0) / y.length;
  const num = x.reduce((sum, xi, i) => sum + (xi - mx) * (y[i]! - my), 0);
  const den = x.reduce((sum, xi) => sum + (xi - mx) ** 2, 0);
  return num / den;
}

async function main(): Promise<void> {
  const server = await startBenchServer();
  const keelQueue = 'bench-cached-keel';
  const bareQueue = 'bench-cached-bare';
  const [keelWorker, bareWorker] = [await startChild(server.address, keelQueue), await startChild(server.address, bareQueue)];
  const temporal = await connectClient(defineConfig({ temporal: { address: server.address } }));
  const client = new KeelClient({ temporal, taskQueue: keelQueue });
  let keelIndex = 0;
  let bareIndex = 0;
  const startKeel = () => client.start('waiting', 'pay', { runId: `cached-keel-${keelIndex++}` });
  const startBare = () => temporal.workflow.start('bareWaitingWorkflow', { taskQueue: bareQueue, workflowId: `cached-bare-${bareIndex++}` });
  try {
    // Warm-up: one run of each side held, so each worker has its workflow thread and bundle loaded before the first reading.
    await fill(temporal, 1, 1, WAITING, startKeel);
    await fill(temporal, 1, 1, BARE_WAITING, startBare);
    const held = [1];
    const keelRss = [await settledRss(keelWorker.pid)];
    const bareRss = [await settledRss(bareWorker.pid)];
    const step = Math.ceil(RUNS / STEPS);
    for (let index = 0; index < STEPS; index++) {
      const total = held.at(-1)! + step;
      await fill(temporal, step, total, WAITING, startKeel);
      await fill(temporal, step, total, BARE_WAITING, startBare);
      held.push(total);
      keelRss.push(await settledRss(keelWorker.pid));
      bareRss.push(await settledRss(bareWorker.pid));
      console.log(`  ${total} runs held a side: worker RSS keel ${MiB(keelRss.at(-1)!).toFixed(0)} MiB, bare ${MiB(bareRss.at(-1)!).toFixed(0)} MiB`);
    }
    // The slope over the steps' readings: the warm-up reading (one run held) is left out, as the heap a first run grows is the thread's, not the run's.
    const keelPerRun = slope(held.slice(1), keelRss.slice(1).map(MiB));
    const barePerRun = slope(held.slice(1), bareRss.slice(1).map(MiB));
    console.log(
      `cached memory: up to ${held.at(-1)} waiting runs held a side, slope of worker RSS: keel ${(keelPerRun * 1024).toFixed(0)} KiB per run, bare ${(barePerRun * 1024).toFixed(0)} KiB per run`,
    );
    // What an evicted waiting run leaves: its history on the server, replayed when its decision comes.
    const sizes = await Promise.all(
      ['cached-keel-0', 'cached-bare-0'].map(async (workflowId) => {
        const history = await temporal.workflow.getHandle(workflowId).fetchHistory();
        return { events: history.events?.length ?? 0, bytes: await historyBytes(temporal, workflowId) };
      }),
    );
    console.log(
      `a waiting run's history: keel ${sizes[0]!.events} events, ${(sizes[0]!.bytes / 1024).toFixed(1)} KiB; bare ${sizes[1]!.events} events, ${(sizes[1]!.bytes / 1024).toFixed(1)} KiB`,
    );
    result('cached memory: keel, worker RSS per cached waiting run (MiB)', keelPerRun, '');
    result('cached memory: bare workflow, worker RSS per cached waiting run (MiB)', barePerRun, '');
    result('cached memory: per cached run, keel / bare', keelPerRun / barePerRun, '≤ 1.5', keelPerRun / barePerRun <= 1.5);
  } finally {
    await keelWorker.stop();
    await bareWorker.stop();
    await temporal.connection.close();
    await server.stop();
  }
}

if (process.argv[2] === 'child') void child();
else
  void main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
