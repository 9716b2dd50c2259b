/**
 * bench/throughput: many concurrent runs on the embedded dev server. Not a test.
 *
 * 1. Model-bound: N (default 500) concurrent 3-turn runs, a 50 ms scripted model and a
 *    trivial tool, one worker; against N bare workflows scheduling the same activities
 *    (same sleeps) on the same worker, N bare workflows with keel's history shape, and N keel
 *    runs with local calls. Runs/s, p50/p95 latency, the process's CPU per run (the worker and its
 *    client), ratio to bare, round by round (goal ≥ 0.90).
 * 2. Activity-bound: M (default 100) concurrent 3-turn runs with two 500 ms tool calls a
 *    turn, workers limited to 10 concurrent activities: one worker against two (goal ≥ 1.8).
 *
 * Run: npx tsx bench/throughput.ts   (env: BENCH_RUNS, BENCH_TOOL_RUNS, BENCH_TP_ROUNDS: interleaved rounds of the model-bound loads, default 3)
 */
import { bundleWorkflowCode, Worker, type NativeConnection } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { z } from 'zod';
import { createActivities } from '../src/worker/create-activities';
import { KeelClient } from '../src/client/keel-client';
import { defineConfig } from '../src/config/load';
import type { KeelConfig } from '../src/config/schema';
import { defineAgent, defineTool } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { connectClient, connectWorker } from '../src/worker/connect';
import { percentile, sleep, startBenchServer } from './harness';
import { median, result } from './report';
import { keelBundleOptions } from '../src/worker/bundle';

const RUNS = Number(process.env.BENCH_RUNS ?? 500);
const TOOL_RUNS = Number(process.env.BENCH_TOOL_RUNS ?? 100);
const ROUNDS = Number(process.env.BENCH_TP_ROUNDS ?? 3);

/** One load's outcome: runs a second, latencies, duration. */
interface Load {
  perSecond: number;
  p50: number;
  p95: number;
  seconds: number;
  /** CPU this process (the worker and its client) spent per run. */
  cpuMsPerRun: number;
}

/** Starts `count` runs at once with `start` and waits for all; runs/s and latencies. */
async function load(count: number, start: (index: number) => Promise<() => Promise<unknown>>): Promise<Load> {
  const began = Date.now();
  const cpu = process.cpuUsage();
  const latencies = await Promise.all(
    Array.from({ length: count }, async (_, index) => {
      const started = Date.now();
      const wait = await start(index);
      await wait();
      return Date.now() - started;
    }),
  );
  const seconds = (Date.now() - began) / 1000;
  const used = process.cpuUsage(cpu);
  return {
    perSecond: count / seconds,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    seconds,
    cpuMsPerRun: (used.user + used.system) / 1000 / count,
  };
}

async function main(): Promise<void> {
  const server = await startBenchServer();
  const { code } = await bundleWorkflowCode(keelBundleOptions(join(__dirname, 'workflows.ts')));

  const noop = defineTool({ name: 'noop', description: 'Does nothing.', input: z.object({ turn: z.number() }), run: () => ({ ok: true }) });
  const slow = defineTool({
    name: 'slow',
    description: 'Takes 500 ms.',
    input: z.object({ turn: z.number(), call: z.number() }),
    run: async () => (await sleep(500), { ok: true }),
  });
  const registry = new Registry().add(noop, slow);
  const modelBound = scriptedModel({
    name: 'scripted/tp-model',
    keepRequests: 0,
    script: [0, 1, 2].map((turn) => toolCallReply({ name: 'noop', input: { turn } }, { delayMs: 50 })).concat([textReply('done', { delayMs: 50 })]),
  });
  const toolBound = scriptedModel({
    name: 'scripted/tp-tools',
    keepRequests: 0,
    script: [0, 1, 2]
      .map((turn) =>
        toolCallReply([
          { name: 'slow', input: { turn, call: 0 } },
          { name: 'slow', input: { turn, call: 1 } },
        ]),
      )
      .concat([textReply('done')]),
  });
  registry.add(
    modelBound,
    defineAgent({ name: 'tp-model', model: modelBound.name, tools: ['noop'] }),
    // The same runs with every model and tool call a local activity (docs/local-calls.md).
    defineAgent({ name: 'tp-model-local', model: modelBound.name, tools: ['noop'], local: { models: true, tools: true } }),
    toolBound,
    defineAgent({ name: 'tp-tools', model: toolBound.name, tools: ['slow'] }),
  );

  const connections: NativeConnection[] = [];
  const clients: Client[] = [];
  const startWorkers = async (config: KeelConfig, count: number, maxActivities?: number) => {
    const workers = await Promise.all(
      Array.from({ length: count }, async () => {
        const connection = await connectWorker(config);
        const temporalClient = await connectClient(config);
        connections.push(connection);
        clients.push(temporalClient);
        return Worker.create({
          connection,
          taskQueue: config.taskQueue,
          workflowBundle: { code },
          ...(maxActivities ? { maxConcurrentActivityTaskExecutions: maxActivities } : {}),
          activities: {
            ...createActivities({ registry, config, client: temporalClient }),
            bareModel: async (turn: number, ms = 0) => (ms && (await sleep(ms)), { turn }),
            bareTool: async (_turn: number, ms = 0) => (ms && (await sleep(ms)), { ok: true }),
          },
        });
      }),
    );
    const running = workers.map((worker) => worker.run());
    return async () => {
      workers.forEach((worker) => worker.shutdown());
      await Promise.all(running);
    };
  };

  try {
    // 1. Model-bound, one worker: keel against bare workflows, alternated.
    const config = defineConfig({ temporal: { address: server.address }, taskQueue: `bench-tp-${randomUUID()}` });
    const stop = await startWorkers(config, 1);
    const temporalClient = await connectClient(config);
    clients.push(temporalClient);
    const client = new KeelClient({ temporal: temporalClient, taskQueue: config.taskQueue });
    const keelRun = async (agent = 'tp-model') => {
      const handle = await client.start(agent, 'go');
      return () => handle.result();
    };
    const bareRun = async () => {
      const handle = await temporalClient.workflow.start('baselineWorkflow', {
        taskQueue: config.taskQueue,
        workflowId: `bare-${randomUUID()}`,
        args: [3, 50, 0, 1],
      });
      return () => handle.result();
    };
    const keelShapedRun = async () => {
      const handle = await temporalClient.workflow.start('keelShapedWorkflow', {
        taskQueue: config.taskQueue,
        workflowId: `keel-shaped-${randomUUID()}`,
        args: [3, 50, 0],
      });
      return () => handle.result();
    };
    await load(20, () => keelRun());
    await load(20, bareRun);
    // ROUNDS rounds, the four loads interleaved in each; each figure is the round with the median runs/s.
    const rounds: Array<Record<'bare' | 'shaped' | 'keel' | 'local', Load>> = [];
    for (let round = 0; round < ROUNDS; round++) {
      rounds.push({
        bare: await load(RUNS, bareRun),
        shaped: await load(RUNS, keelShapedRun),
        keel: await load(RUNS, () => keelRun()),
        local: await load(RUNS, () => keelRun('tp-model-local')),
      });
    }
    const medianOf = (kind: keyof (typeof rounds)[number]) =>
      [...rounds.map((entry) => entry[kind])].sort((a, b) => a.perSecond - b.perSecond)[Math.floor(ROUNDS / 2)]!;
    const [bare, shaped, keel, local] = [medianOf('bare'), medianOf('shaped'), medianOf('keel'), medianOf('local')];
    console.log(
      `throughput, model-bound: runs/s by round: ${rounds.map((entry) => `bare ${entry.bare.perSecond.toFixed(1)}, shaped ${entry.shaped.perSecond.toFixed(1)}, keel ${entry.keel.perSecond.toFixed(1)}, local ${entry.local.perSecond.toFixed(1)}`).join('; ')}`,
    );
    console.log(`throughput, model-bound: ${RUNS} concurrent 3-turn runs, 50 ms model, one worker (median of ${ROUNDS} interleaved rounds)`);
    console.log(`  bare workflows: ${bare.perSecond.toFixed(1)} runs/s, p50 ${bare.p50} ms, p95 ${bare.p95} ms (${bare.seconds.toFixed(1)} s)`);
    console.log(
      `  bare, keel's history shape: ${shaped.perSecond.toFixed(1)} runs/s, p50 ${shaped.p50} ms, p95 ${shaped.p95} ms (${shaped.seconds.toFixed(1)} s)`,
    );
    console.log(`  keel runs:      ${keel.perSecond.toFixed(1)} runs/s, p50 ${keel.p50} ms, p95 ${keel.p95} ms (${keel.seconds.toFixed(1)} s)`);
    const cpuPerRun = (kind: keyof (typeof rounds)[number]) => median(rounds.map((entry) => entry[kind].cpuMsPerRun));
    console.log(
      `  worker+client CPU per run (median of rounds): bare ${cpuPerRun('bare').toFixed(1)} ms, shaped ${cpuPerRun('shaped').toFixed(1)} ms, keel ${cpuPerRun('keel').toFixed(1)} ms, local ${cpuPerRun('local').toFixed(1)} ms`,
    );
    result('throughput: keel, worker+client CPU per 3-turn run (ms, median of rounds)', cpuPerRun('keel'), `bare ${cpuPerRun('bare').toFixed(1)}`);
    result('throughput: keel runs/s (model-bound, 1 worker)', keel.perSecond, '');
    result('throughput: keel p50 / p95 latency (ms)', keel.p50, `p95 ${keel.p95}`);
    // Paired: each round's keel load over the same round's bare load, then the median of the rounds.
    const paired = median(rounds.map((entry) => entry.keel.perSecond / entry.bare.perSecond));
    console.log(`  keel / bare by round: ${rounds.map((entry) => (entry.keel.perSecond / entry.bare.perSecond).toFixed(3)).join(', ')}`);
    result('throughput: keel / bare runs/s, paired by round (median)', paired, '≥ 0.90', paired >= 0.9);
    // Where the gap lies: the server's extra work for keel's history, then keel's work in the worker.
    result("throughput: bare with keel's history shape / bare runs/s", shaped.perSecond / bare.perSecond, '');
    result("throughput: keel / bare with keel's history shape runs/s", keel.perSecond / shaped.perSecond, '');
    console.log(`  keel, local calls: ${local.perSecond.toFixed(1)} runs/s, p50 ${local.p50} ms, p95 ${local.p95} ms (${local.seconds.toFixed(1)} s)`);
    result('throughput: keel with local calls / bare runs/s', local.perSecond / bare.perSecond, '');
    await stop();

    // 2. Activity-bound: one worker against two, 20 activity slots each.
    const scale = async (workers: number) => {
      const scaled = defineConfig({ temporal: { address: server.address }, taskQueue: `bench-scale-${randomUUID()}` });
      const stopScaled = await startWorkers(scaled, workers, 10);
      const scaledClient = new KeelClient({ temporal: temporalClient, taskQueue: scaled.taskQueue });
      try {
        return await load(TOOL_RUNS, async () => {
          const handle = await scaledClient.start('tp-tools', 'go');
          return () => handle.result();
        });
      } finally {
        await stopScaled();
      }
    };
    const one = await scale(1);
    const two = await scale(2);
    console.log(`throughput, activity-bound: ${TOOL_RUNS} concurrent 3-turn runs, two 500 ms tools a turn, 10 activity slots per worker`);
    console.log(`  one worker:  ${one.perSecond.toFixed(2)} runs/s, p50 ${one.p50} ms, p95 ${one.p95} ms`);
    console.log(`  two workers: ${two.perSecond.toFixed(2)} runs/s, p50 ${two.p50} ms, p95 ${two.p95} ms`);
    result('scale: two workers / one (activity-bound)', two.perSecond / one.perSecond, '≥ 1.8', two.perSecond / one.perSecond >= 1.8);
  } finally {
    await Promise.all(connections.map((connection) => connection.close()));
    await Promise.all(clients.map((temporalClient) => temporalClient.connection.close()));
    await server.stop();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
