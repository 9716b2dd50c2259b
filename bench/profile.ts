/**
 * bench/profile: where a keel worker's CPU goes per run. Runs RUNS (default 300) concurrent
 * 3-turn runs (scripted model, trivial tool) on an in-process keel worker under `node
 * --cpu-prof` (every thread: the main one with activities, data converter and client, and the
 * workflow threads), then sums each profile's self time by where the code lives (the SDK's
 * worker and workflow runtime, keel's workflow code, middleware, data converter and External
 * Storage, zod, Node internals, ...) and prints the shares and the CPU per run. Not a test.
 *
 * Run: npx tsx bench/profile.ts   (env: BENCH_PROFILE_RUNS)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { defineAgent, defineTool } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { startBenchServer, startBenchWorker } from './harness';
import { result } from './report';

const RUNS = Number(process.env.BENCH_PROFILE_RUNS ?? 300);
const ROOT = resolve(__dirname, '..');

/** Where a function's code lives, first match wins. */
const CATEGORIES: Array<[string, RegExp]> = [
  ['keel: workflow code', /\/src\/workflows\//],
  ['keel: middleware', /\/src\/middleware\//],
  ['keel: data converter, External Storage, codec', /\/src\/storage\/|external-storage|\/src\/security\//],
  ['keel: activities', /\/src\/activities\//],
  ['keel: client', /\/src\/client\//],
  ['keel: other', /\/src\//],
  ['zod', /node_modules\/zod\//],
  ['SDK: workflow runtime (in the isolate)', /@temporalio\/workflow\/|workflow-bundle|webpack/],
  ['SDK: payload conversion, protobuf', /@temporalio\/common\/|@temporalio\/proto\/|protobufjs|long\//],
  ['SDK: worker (activations, threads, core bridge)', /@temporalio\/worker\/|@temporalio\/core-bridge\//],
  ['SDK: client', /@temporalio\/client\//],
  ['OpenTelemetry, tracing', /opentelemetry/],
  ['other dependencies', /node_modules\//],
  ['Node internals', /^node:|^internal\/|^$/],
];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time (µs) by category over every profile in `dir`, with the idle and GC time apart. */
function summarize(dir: string): Map<string, number> {
  const totals = new Map<string, number>();
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    const category = new Map<number, string>();
    for (const node of profile.nodes) {
      const { functionName, url } = node.callFrame;
      const name =
        functionName === '(idle)' || functionName === '(program)'
          ? 'idle, waiting'
          : functionName === '(garbage collector)'
            ? 'garbage collection'
            : (CATEGORIES.find(([, pattern]) => pattern.test(url))?.[0] ?? 'Node internals');
      category.set(node.id, name);
    }
    profile.samples.forEach((id, index) => {
      const name = category.get(id) ?? 'Node internals';
      totals.set(name, (totals.get(name) ?? 0) + (profile.timeDeltas[index] ?? 0));
    });
  }
  return totals;
}

/** The child: the runs themselves, under --cpu-prof. */
async function child(): Promise<void> {
  const server = await startBenchServer();
  const tool = defineTool({ name: 'noop', description: 'Does nothing.', input: z.object({ turn: z.number() }), run: () => ({ ok: true }) });
  const model = scriptedModel({
    name: 'scripted/profile',
    keepRequests: 0,
    script: [toolCallReply({ name: 'noop', input: { turn: 0 } }), toolCallReply({ name: 'noop', input: { turn: 1 } }), textReply('done')],
  });
  const registry = new Registry().add(tool, model, defineAgent({ name: 'profiled', model: model.name, tools: [tool] }));
  const bench = await startBenchWorker(server, registry);
  try {
    const started = Date.now();
    await Promise.all(Array.from({ length: RUNS }, async () => (await bench.client.start('profiled', 'go')).result()));
    console.log(`child: ${RUNS} runs in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    await bench.stop();
  }
}

function main(): void {
  const dir = mkdtempSync(join(tmpdir(), 'keel-profile-'));
  const run = spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--import', 'tsx', __filename, 'child'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (run.status !== 0) throw new Error(`the profiled child failed (exit ${run.status})`);
  const totals = summarize(dir);
  const busy = [...totals].filter(([name]) => name !== 'idle, waiting').reduce((sum, [, micros]) => sum + micros, 0);
  console.log(`profile: ${RUNS} 3-turn runs, CPU on every thread of the worker process (profiles in ${dir})`);
  for (const [name, micros] of [...totals].sort((a, b) => b[1] - a[1])) {
    if (name === 'idle, waiting') continue;
    console.log(`  ${name.padEnd(48)} ${(micros / 1000 / RUNS).toFixed(2).padStart(6)} ms/run  ${((100 * micros) / busy).toFixed(1).padStart(5)} %`);
  }
  console.log(`  ${'total (busy)'.padEnd(48)} ${(busy / 1000 / RUNS).toFixed(2).padStart(6)} ms/run`);
  result('profile: worker-process CPU per 3-turn run, all threads (ms)', busy / 1000 / RUNS, '');
}

if (process.argv[2] === 'child') {
  void child().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
} else main();
