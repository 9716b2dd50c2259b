/**
 * bench/profile: where a keel worker's CPU goes per run. Runs RUNS (default 300) concurrent
 * 3-turn runs (scripted model, trivial tool) on an in-process keel worker under `node
 * --cpu-prof` (every thread: the main one with activities, data converter and client, and the
 * workflow threads), then sums each profile's self time by where the code lives (the SDK's
 * worker and workflow runtime, keel's workflow code, middleware, data converter and External
 * Storage, zod, Node internals, ...) and prints the shares and the CPU per run. Not a test.
 *
 * Run: npx tsx bench/profile.ts   (env: BENCH_PROFILE_RUNS; BENCH_PROFILE_DIR=<dir> reports an earlier run's profiles)
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

/** Where a function's code lives, first match wins (code in the workflow bundle by the module it came from). */
const CATEGORIES: Array<[string, RegExp]> = [
  ['SDK: promise hooks, stack traces of workflow promises', /@temporalio\/worker\/lib\/workflow\/vm-shared/],
  ['zod', /node_modules\/zod\//],
  ['SDK: workflow runtime (in the isolate)', /@temporalio\/workflow\/|webpack runtime/],
  ['SDK: payload conversion, protobuf', /@temporalio\/common\/|@temporalio\/proto\/|protobufjs|long\//],
  ['SDK: worker (activations, threads, core bridge)', /@temporalio\/worker\/|@temporalio\/core-bridge\//],
  ['SDK: client', /@temporalio\/client\//],
  ['OpenTelemetry, tracing', /opentelemetry/],
  ['other dependencies', /node_modules\//],
  ['keel: workflow code', /\/src\/workflows\//],
  ['keel: middleware', /\/src\/middleware\//],
  ['keel: data converter, External Storage, codec', /\/src\/storage\/|external-storage|\/src\/security\//],
  ['keel: activities', /\/src\/activities\//],
  ['keel: client', /\/src\/client\//],
  ['keel: other', /\/src\//],
  ['Node internals', /^node:|^internal\/|^$/],
];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time (µs) of each of keel's source files, from the last `summarize`. */
const keelModules = new Map<string, number>();
/** Self time (µs) in zod by the file that called it, from the last `summarize`. */
const zodCallers = new Map<string, number>();

/** The webpack module of each line of a workflow bundle (its runtime after the last module), read once per bundle. */
const bundleModules = new Map<string, string[]>();

/** Where the code at `url`:`line` (0-based) came from: for the workflow bundle, the module's own path. */
function sourceOf(url: string, line: number): string {
  if (!/workflow-bundle-[0-9a-f]+\.js$/.test(url)) return url;
  const file = url.replace(/^file:\/\//, '');
  let modules = bundleModules.get(file);
  if (!modules) {
    modules = [];
    let current = 'webpack runtime';
    for (const text of readFileSync(file, 'utf8').split('\n')) {
      const start = /^\/\*\*\*\/ "(\.\/[^"]+)"/.exec(text);
      if (start) current = `/${start[1]!.slice(2)}`;
      else if (text.startsWith('/******/')) current = 'webpack runtime';
      modules.push(current);
    }
    bundleModules.set(file, modules);
  }
  return modules[line] ?? 'webpack runtime';
}

/** Self time (µs) by category over every profile in `dir`, with the idle and GC time apart; keel's modules apart too. */
function summarize(dir: string): Map<string, number> {
  const totals = new Map<string, number>();
  keelModules.clear();
  zodCallers.clear();
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    const category = new Map<number, string>();
    const source = new Map<number, string>();
    for (const node of profile.nodes) {
      const { functionName, url, lineNumber } = node.callFrame;
      const from = sourceOf(url, lineNumber);
      source.set(node.id, from);
      const name =
        functionName === '(idle)' || functionName === '(program)'
          ? 'idle, waiting'
          : functionName === '(garbage collector)'
            ? 'garbage collection'
            : functionName === 'runInContext' && url === ''
              ? 'SDK: entering the workflow sandbox (vm runInContext)'
              : (CATEGORIES.find(([, pattern]) => pattern.test(from))?.[0] ?? 'Node internals');
      category.set(node.id, name);
    }
    const parent = new Map<number, number>();
    for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
    /** The first caller outside zod of a zod frame: whose schemas zod was building or running. */
    const zodCaller = (id: number): string => {
      let at: number | undefined = id;
      while (at !== undefined && category.get(at) === 'zod') at = parent.get(at);
      return at === undefined ? '(none)' : (source.get(at) ?? '');
    };
    profile.samples.forEach((id, index) => {
      const name = category.get(id) ?? 'Node internals';
      const micros = profile.timeDeltas[index] ?? 0;
      totals.set(name, (totals.get(name) ?? 0) + micros);
      const from = name === 'zod' ? zodCaller(id) : (source.get(id) ?? '');
      if (name.startsWith('keel')) keelModules.set(from, (keelModules.get(from) ?? 0) + micros);
      if (name === 'zod') zodCallers.set(from, (zodCallers.get(from) ?? 0) + micros);
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
  // BENCH_PROFILE_DIR reads the profiles of an earlier run again instead of running anew.
  const dir = process.env.BENCH_PROFILE_DIR ?? mkdtempSync(join(tmpdir(), 'keel-profile-'));
  if (!process.env.BENCH_PROFILE_DIR) profileChild(dir);
  report(dir);
}

function profileChild(dir: string): void {
  const run = spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--import', 'tsx', __filename, 'child'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (run.status !== 0) throw new Error(`the profiled child failed (exit ${run.status})`);
}

function report(dir: string): void {
  const totals = summarize(dir);
  const busy = [...totals].filter(([name]) => name !== 'idle, waiting').reduce((sum, [, micros]) => sum + micros, 0);
  console.log(`profile: ${RUNS} 3-turn runs, CPU on every thread of the worker process (profiles in ${dir})`);
  for (const [name, micros] of [...totals].sort((a, b) => b[1] - a[1])) {
    if (name === 'idle, waiting') continue;
    console.log(`  ${name.padEnd(48)} ${(micros / 1000 / RUNS).toFixed(2).padStart(6)} ms/run  ${((100 * micros) / busy).toFixed(1).padStart(5)} %`);
  }
  console.log(`  ${'total (busy)'.padEnd(48)} ${(busy / 1000 / RUNS).toFixed(2).padStart(6)} ms/run`);
  const top = (title: string, files: Map<string, number>) => {
    console.log(`  ${title}`);
    for (const [file, micros] of [...files].sort((a, b) => b[1] - a[1]).slice(0, 10)) {
      console.log(`    ${file.replace(/^.*\/src\//, 'src/').padEnd(46)} ${(micros / 1000 / RUNS).toFixed(2).padStart(6)} ms/run`);
    }
  };
  top("keel's busiest files:", keelModules);
  top('zod, by the file that called it:', zodCallers);
  result('profile: worker-process CPU per 3-turn run, all threads (ms)', busy / 1000 / RUNS, '');
}

if (process.argv[2] === 'child') {
  void child().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
} else main();
