/**
 * bench/overhead: what keel's loop costs over the activities it schedules, and how a run's
 * history grows with its turns. Not a test: prints figures, asserts nothing.
 *
 * 1. Overhead: an N-turn keel run (scripted model, trivial tool) versus a bare workflow
 *    scheduling the same activities, same server, same worker, interleaved repetitions;
 *    prints medians and their ratio (goal ≤ 1.10), and the model activity's own time
 *    (reading its request) against a bare activity's (goal ≤ 5 ms more).
 * 2. History growth: runs whose tool returns 20 KB each turn, for several turn counts;
 *    prints history bytes and bytes per turn (goal: linear growth, constant increments).
 *
 * Run: npm run bench   (env: BENCH_TURNS, BENCH_REPS)
 */
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { z } from 'zod';
import { createActivities } from '../src/worker/create-activities';
import { KeelClient } from '../src/client/keel-client';
import { defineConfig } from '../src/config/load';
import { defineAgent, defineTool } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { keelDataConverter } from '../src/storage/data-converter';
import { connectClient, connectWorker } from '../src/worker/connect';
import { startBenchServer } from './harness';
import { median, result } from './report';
import { keelBundleOptions } from '../src/worker/bundle';

const TURNS = Number(process.env.BENCH_TURNS ?? 10);
const REPS = Number(process.env.BENCH_REPS ?? 7);
const GROWTH_TURNS = [2, 4, 8, 16];

async function main(): Promise<void> {
  // The embedded server's defaults (DEV_SERVER_DYNAMIC_CONFIG), overridden by BENCH_DYNAMIC (JSON) to compare settings.
  const dynamicConfig = process.env.BENCH_DYNAMIC ? (JSON.parse(process.env.BENCH_DYNAMIC) as Record<string, unknown>) : {};
  const server = await startBenchServer(dynamicConfig);
  const config = defineConfig({ temporal: { address: server.address }, taskQueue: `bench-${randomUUID()}` });

  const noop = defineTool({ name: 'noop', description: 'Does nothing.', input: z.object({ turn: z.number() }), run: () => ({ ok: true }) });
  const blob = defineTool({
    name: 'blob20k',
    description: 'Returns 20 KB.',
    input: z.object({ turn: z.number() }),
    run: ({ turn }) => ({ turn, data: 'x'.repeat(20_000) }),
  });
  const loopScript = (tool: string, turns: number) => [
    ...Array.from({ length: turns }, (_, turn) => toolCallReply({ name: tool, input: { turn } })),
    textReply('done'),
  ];
  const registry = new Registry().add(noop, blob);
  const loopModel = scriptedModel({ name: 'scripted/bench-loop', script: loopScript('noop', TURNS) });
  registry.add(loopModel, defineAgent({ name: 'bench-loop', model: loopModel.name, tools: [noop], maxTurns: TURNS }));
  // The same loop with every model and tool call a local activity (docs/local-calls.md).
  const everyCallLocal = { models: true, tools: true };
  registry.add(defineAgent({ name: 'bench-loop-local', model: loopModel.name, tools: [noop], maxTurns: TURNS, local: everyCallLocal }));
  for (const turns of GROWTH_TURNS) {
    const model = scriptedModel({ name: `scripted/bench-growth-${turns}`, script: loopScript('blob20k', turns) });
    registry.add(model, defineAgent({ name: `bench-growth-${turns}`, model: model.name, tools: [blob], maxTurns: turns }));
    registry.add(defineAgent({ name: `bench-growth-local-${turns}`, model: model.name, tools: [blob], maxTurns: turns, local: everyCallLocal }));
  }

  const connection = await connectWorker(config);
  const temporalClient = await connectClient(config);
  const { code } = await bundleWorkflowCode(keelBundleOptions(join(__dirname, 'workflows.ts')));
  const dataConverter = await keelDataConverter(config);
  const worker = await Worker.create({
    connection,
    // keel's own data converter (External Storage, as every keel worker has it).
    ...(dataConverter ? { dataConverter } : {}),
    taskQueue: config.taskQueue,
    workflowBundle: { code },
    activities: {
      ...createActivities({ registry, config, client: temporalClient }),
      bareModel: async (turn: number) => ({ turn }),
      bareTool: async () => ({ ok: true }),
    },
    ...(process.env.BENCH_WORKER ? (JSON.parse(process.env.BENCH_WORKER) as object) : {}),
  });
  const running = worker.run();
  const client = new KeelClient({ temporal: temporalClient, taskQueue: config.taskQueue });

  /** Server-side duration of a closed run: first to last event of its history. */
  const serverMs = async (workflowId: string) => {
    const events = (await temporalClient.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const millis = (event: (typeof events)[number]) => Number(event.eventTime!.seconds) * 1000 + (event.eventTime!.nanos ?? 0) / 1e6;
    if (process.env.BENCH_DEBUG) {
      let previous = millis(events[0]!);
      for (const event of events) {
        console.log(`    ${temporal.api.enums.v1.EventType[event.eventType!]} +${(millis(event) - previous).toFixed(1)}`);
        previous = millis(event);
      }
    }
    // Started → completed of each model-like activity (keel's callModel, the baseline's bareModel).
    const scheduled = new Map<string, string>();
    const started = new Map<string, number>();
    for (const event of events) {
      const attributes = event.activityTaskScheduledEventAttributes;
      if (attributes) scheduled.set(String(event.eventId), attributes.activityType?.name ?? '');
      if (event.activityTaskStartedEventAttributes) started.set(String(event.activityTaskStartedEventAttributes.scheduledEventId), millis(event));
      const completed = event.activityTaskCompletedEventAttributes;
      if (completed) {
        const type = scheduled.get(String(completed.scheduledEventId));
        const began = started.get(String(completed.scheduledEventId));
        if (began !== undefined && (type === 'callModel' || type === 'bareModel'))
          (type === 'callModel' ? modelActivityMs.keel : modelActivityMs.bare).push(millis(event) - began);
      }
    }
    return millis(events.at(-1)!) - millis(events[0]!);
  };
  const modelActivityMs = { keel: [] as number[], bare: [] as number[] };
  const timeKeel = async (agent = 'bench-loop') => {
    const handle = await client.start(agent, 'go');
    await handle.result();
    return serverMs(handle.runId);
  };
  const timeBaseline = async () => {
    const workflowId = `baseline-${randomUUID()}`;
    await temporalClient.workflow.execute('baselineWorkflow', { taskQueue: config.taskQueue, workflowId, args: [TURNS] });
    return serverMs(workflowId);
  };

  try {
    await timeKeel();
    await timeKeel('bench-loop-local');
    await timeBaseline();
    modelActivityMs.keel.length = 0;
    modelActivityMs.bare.length = 0;
    const keel: number[] = [];
    const local: number[] = [];
    const baseline: number[] = [];
    for (let rep = 0; rep < REPS; rep++) {
      baseline.push(await timeBaseline());
      keel.push(await timeKeel());
      local.push(await timeKeel('bench-loop-local'));
    }
    const keelMedian = median(keel);
    const localMedian = median(local);
    const baselineMedian = median(baseline);
    console.log(`overhead: ${TURNS}-turn tool loop, ${REPS} interleaved repetitions each`);
    console.log(
      `  bare workflow, same ${2 * TURNS + 1} activities: median ${baselineMedian.toFixed(1)} ms  (all: ${baseline.map((v) => v.toFixed(0)).join(', ')})`,
    );
    console.log(`  keel generateWorkflow:                  median ${keelMedian.toFixed(1)} ms  (all: ${keel.map((v) => v.toFixed(0)).join(', ')})`);
    console.log(`  keel, every call local:                 median ${localMedian.toFixed(1)} ms  (all: ${local.map((v) => v.toFixed(0)).join(', ')})`);
    console.log(`  ratio keel / bare: ${(keelMedian / baselineMedian).toFixed(3)}  (goal ≤ 1.10)`);
    console.log(`  ratio keel with local calls / bare: ${(localMedian / baselineMedian).toFixed(3)}  (goal ≤ 0.35)`);
    result(`loop: ${TURNS}-turn keel run (ms, median)`, keelMedian, '');
    result(`loop: ${TURNS}-turn keel run, every call local (ms, median)`, localMedian, '');
    result(`loop: bare workflow, same ${2 * TURNS + 1} activities (ms)`, baselineMedian, '');
    result('loop: keel / bare workflow', keelMedian / baselineMedian, '≤ 1.10', keelMedian / baselineMedian <= 1.1);
    result('loop: keel with local calls / bare workflow', localMedian / baselineMedian, '≤ 0.35', localMedian / baselineMedian <= 0.35);
    // The model activity's own time (started → completed): reading the request from the run, against a bare activity.
    const keelModel = median(modelActivityMs.keel);
    const bareModel = median(modelActivityMs.bare);
    console.log(`  model activity, started→completed: keel callModel median ${keelModel.toFixed(2)} ms, bare activity ${bareModel.toFixed(2)} ms`);
    result('loop: model-activity overhead per call (ms)', keelModel - bareModel, '≤ 5', keelModel - bareModel <= 5);

    for (const [label, prefix] of [
      ['', 'bench-growth'],
      [', every call local', 'bench-growth-local'],
    ] as const) {
      console.log(`history growth: tool returns 20 KB per turn${label}`);
      let previous: { turns: number; bytes: number } | undefined;
      const perTurn: number[] = [];
      for (const turns of GROWTH_TURNS) {
        const handle = await client.start(`${prefix}-${turns}`, 'go');
        await handle.result();
        const history = await temporalClient.workflow.getHandle(handle.runId).fetchHistory();
        const bytes = temporal.api.history.v1.History.encode(history).finish().length;
        const increment = previous ? (bytes - previous.bytes) / (turns - previous.turns) : undefined;
        perTurn.push(bytes / turns / 1024);
        console.log(
          `  ${String(turns).padStart(2)} turns: ${(bytes / 1024).toFixed(1)} KiB, ${(bytes / turns / 1024).toFixed(1)} KiB/turn${increment !== undefined ? `, +${(increment / 1024).toFixed(1)} KiB per added turn` : ''} (${history.events?.length} events)`,
        );
        previous = { turns, bytes };
      }
      // Linear: no turn count costs more per turn than the smallest did (the 16-turn run's payloads go to the store).
      result(
        `history: KiB per turn at ${GROWTH_TURNS.join(' / ')} turns of 20 KiB tool output${label}`,
        Math.max(...perTurn),
        `≤ ${perTurn[0]!.toFixed(1)} (linear)`,
        Math.max(...perTurn) <= perTurn[0]! * 1.02,
      );
      console.log(`  KiB per turn: ${perTurn.map((value) => value.toFixed(1)).join(' / ')}`);
    }
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
    await temporalClient.connection.close();
    await server.stop();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
