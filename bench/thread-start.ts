/**
 * bench/thread-start: what a worker pays, per workflow thread, before its first run: the SDK's
 * reusable sandbox built from the workflow bundle (evaluating what the bundle preloads, then the
 * SDK's deep freeze of it). keel's bundle against a bare workflow's (bench/baseline-workflow.ts,
 * bundled by the SDK's defaults), built alternately in this one process, so both see the same
 * load. A worker builds one per workflow thread (two by default), and under the SDK's 5 s
 * isolate timeout: a sandbox that takes longer fails the worker's start. Not a test: prints
 * figures, asserts nothing.
 *
 * Run: npx tsx bench/thread-start.ts   (env: BENCH_THREAD_REPS, default 15 a side)
 */
import { bundleWorkflowCode } from '@temporalio/worker';
import { ReusableVMWorkflowCreator } from '@temporalio/worker/lib/workflow/reusable-vm';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { workflowBundlePath } from '../src/worker/bundle';
import { median, result } from './report';

const REPS = Number(process.env.BENCH_THREAD_REPS ?? 15);
const noop = (): void => undefined;
const QUIET = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };
const NO_SOURCE_MAP = { version: 3, file: 'bundle.js', sources: [], names: [], mappings: '' };

async function buildMs(code: string): Promise<number> {
  const started = performance.now();
  const sandbox = await ReusableVMWorkflowCreator.create({ code, filename: 'bundle.js', sourceMap: NO_SOURCE_MAP }, 60_000, new Set(), () => false);
  const ms = performance.now() - started;
  await sandbox.destroy();
  return ms;
}

async function main(): Promise<void> {
  const keel = readFileSync(await workflowBundlePath(), 'utf8');
  const bare = (await bundleWorkflowCode({ workflowsPath: join(__dirname, 'baseline-workflow.ts'), logger: QUIET })).code;
  // Two warm builds a side, not counted (the first compiles the SDK's own scripts).
  for (let warm = 0; warm < 2; warm++) {
    await buildMs(keel);
    await buildMs(bare);
  }
  const keelMs: number[] = [];
  const bareMs: number[] = [];
  const ratios: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    // The first side alternates, so neither always builds among the other's garbage.
    let keelTime: number;
    let bareTime: number;
    if (rep % 2) {
      keelTime = await buildMs(keel);
      bareTime = await buildMs(bare);
    } else {
      bareTime = await buildMs(bare);
      keelTime = await buildMs(keel);
    }
    keelMs.push(keelTime);
    bareMs.push(bareTime);
    ratios.push(keelTime / bareTime);
  }
  console.log(`keel bundle ${(keel.length / 2 ** 20).toFixed(1)} MiB, bare ${(bare.length / 2 ** 20).toFixed(1)} MiB; ${REPS} builds a side`);
  result('thread start: keel sandbox build (ms, median)', median(keelMs), '');
  result('thread start: bare workflow sandbox build (ms, median)', median(bareMs), '');
  result('thread start: keel / bare, paired (median)', median(ratios), '');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
