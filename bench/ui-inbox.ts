/**
 * bench/ui-inbox: `keel ui`'s approval inbox at 1,000 pending holds, and how much memory the UI
 * server keeps. Not a test: prints figures, asserts nothing.
 *
 * 1. Inbox: N (default 1,000) runs of `guarded` (test/fixtures/guard-agents.ts), each waiting on
 *    a tool approval; GET /api/inbox, median and p90 of REPS requests (goal < 1 s, all N holds),
 *    against the bare visibility listing of the same runs (the inbox's query, pages of 100, memo
 *    included) in the same interleaved repetitions; their ratio. To say where the time goes, the
 *    same repetitions time listHolds in this process (no HTTP), the listing by a client without
 *    External Storage (the SDK's payload visitor), and the raw ListWorkflowExecutions pages (no
 *    decoding) of 100 and of 1,000; each with the CPU the dev server and the caller spent (/proc).
 * 2. Memory: the UI server runs in a child process of its own (this file with `serve`, under
 *    node --expose-gc); heap after a full GC and RSS after startup, after the inbox requests,
 *    while SSE clients follow runs (one each, default 20 for 30 s), once they have left (its
 *    `watched()` back to 0), and after each half of a stretch of back-to-back inbox requests.
 *
 * Run: npm run bench:inbox   (env: BENCH_INBOX_RUNS, BENCH_INBOX_REPS, BENCH_INBOX_SSE,
 * BENCH_INBOX_SSE_S, BENCH_INBOX_SOAK_S)
 */
import { Client } from '@temporalio/client';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { listHolds } from '../src/client/holds';
import { defineConfig } from '../src/config/load';
import { HOLDS_MEMO_KEY, MemoHoldSchema } from '../src/core/run';
import { Registry } from '../src/registry';
import { startUiServer } from '../src/ui/server';
import { danger, guarded, guardedModel } from '../test/fixtures/guard-agents';
import { WAITING, cpuMsOf, percentile, sleep, startBenchServer, startBenchWorker, untilWaiting } from './harness';
import { median, result } from './report';

const RUNS = Number(process.env.BENCH_INBOX_RUNS ?? 1000);
const REPS = Number(process.env.BENCH_INBOX_REPS ?? 15);
const SSE_CLIENTS = Number(process.env.BENCH_INBOX_SSE ?? 20);
const SSE_S = Number(process.env.BENCH_INBOX_SSE_S ?? 30);
const SOAK_S = Number(process.env.BENCH_INBOX_SOAK_S ?? 60);
/** Runs started at once while filling the inbox. */
const START_CONCURRENCY = 25;
const ROOT = resolve(__dirname, '..');

const MiB = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** What the child reports of its memory: after a full GC, and how many runs it watches. */
interface MemoryReport {
  heapUsed: number;
  heapTotal: number;
  rss: number;
  external: number;
  watched: number;
}

/** The child: the UI server on a free loopback port; `memory` on stdin answers a MemoryReport line, `close` stops it. */
async function serve(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run the UI server child with node --expose-gc');
  const config = defineConfig({
    temporal: { address: process.env.BENCH_UI_ADDRESS! },
    taskQueue: process.env.BENCH_UI_TASK_QUEUE!,
    server: { enabled: false },
  });
  const ui = await startUiServer({ config, port: 0, token: undefined });
  const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
  say({ origin: ui.origin });
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line === 'memory') {
      gc();
      gc();
      const { heapUsed, heapTotal, rss, external } = process.memoryUsage();
      say({ memory: { heapUsed, heapTotal, rss, external, watched: ui.watched() } satisfies MemoryReport });
    } else if (line === 'close') void ui.close().then(() => process.exit(0));
  });
}

/** Starts the UI server child; its origin, its memory on request, and how to stop it. */
async function startUiChild(address: string, taskQueue: string) {
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', __filename, 'serve'], {
    cwd: ROOT,
    env: { ...process.env, BENCH_UI_ADDRESS: address, BENCH_UI_TASK_QUEUE: taskQueue },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting: Array<(line: Record<string, unknown>) => void> = [];
  createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()?.(JSON.parse(line) as Record<string, unknown>));
  const next = () => new Promise<Record<string, unknown>>((done) => waiting.push(done));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const { origin } = (await Promise.race([next(), exited.then(() => Promise.reject(new Error('the UI server child exited')))])) as { origin: string };
  return {
    origin,
    pid: child.pid!,
    async memory(): Promise<MemoryReport> {
      const answer = next();
      child.stdin.write('memory\n');
      return ((await answer) as { memory: MemoryReport }).memory;
    },
    async stop(): Promise<void> {
      child.stdin.write('close\n');
      await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
    },
  };
}

/** The SDK's listing of the waiting runs (memo decoded, as the inbox reads them): how many have holds in their memo. */
async function memosListed(client: Client, pageSize: number): Promise<number> {
  let runs = 0;
  for await (const run of client.workflow.list({ query: WAITING, pageSize })) if (z.array(MemoHoldSchema).safeParse(run.memo?.[HOLDS_MEMO_KEY]).success) runs++;
  return runs;
}

/** The raw ListWorkflowExecutions pages, nothing decoded: how many runs they list. */
async function rawListed(client: Client, pageSize: number): Promise<number> {
  let nextPageToken: Uint8Array | undefined;
  let runs = 0;
  do {
    const page = await client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace,
      query: WAITING,
      pageSize,
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    runs += page.executions?.length ?? 0;
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return runs;
}

async function main(): Promise<void> {
  const server = await startBenchServer();
  const registry = new Registry().add(danger, guardedModel, guarded);
  const taskQueue = `bench-inbox-${randomUUID()}`;
  const bench = await startBenchWorker(server, registry, { taskQueue });
  const { client, temporalClient } = bench;
  let ui: Awaited<ReturnType<typeof startUiChild>> | undefined;
  try {
    // 1. The inbox fills: RUNS runs, START_CONCURRENCY started at a time, each held at its first tool call.
    const filling = Date.now();
    const runIds: string[] = [];
    let started = 0;
    await Promise.all(
      Array.from({ length: START_CONCURRENCY }, async () => {
        while (started < RUNS) {
          started++;
          runIds.push((await client.start('guarded', 'go', { idPrefix: 'inbox' })).runId);
        }
      }),
    );
    const startedS = (Date.now() - filling) / 1000;
    await untilWaiting(temporalClient, RUNS);
    console.log(`inbox: ${RUNS} runs of guarded started in ${startedS.toFixed(1)} s, all waiting after ${((Date.now() - filling) / 1000).toFixed(1)} s`);

    ui = await startUiChild(server.address, taskQueue);
    const startup = await ui.memory();

    // A client like keel's but without External Storage: what the SDK's payload visitor costs a listing.
    const plainClient = new Client({ connection: temporalClient.connection, namespace: temporalClient.options.namespace });
    // Each probe returns how many holds (or runs with holds in their memo) it saw; `caller` is whose CPU it spends.
    const probes: Array<{ label: string; caller: 'ui' | 'here'; run: () => Promise<number> }> = [
      {
        label: 'GET /api/inbox (UI server child)',
        caller: 'ui',
        run: async () => {
          const response = await fetch(`${ui!.origin}/api/inbox`);
          return ((await response.json()) as { holds?: unknown[] }).holds?.length ?? -response.status;
        },
      },
      { label: 'listHolds in this process (no HTTP)', caller: 'here', run: async () => (await listHolds(temporalClient)).length },
      { label: 'client.workflow.list, pages of 100, memo', caller: 'here', run: () => memosListed(temporalClient, 100) },
      { label: 'the same, client without External Storage', caller: 'here', run: () => memosListed(plainClient, 100) },
      { label: 'raw ListWorkflowExecutions, pages of 100', caller: 'here', run: () => rawListed(temporalClient, 100) },
      { label: 'raw ListWorkflowExecutions, pages of 1000', caller: 'here', run: () => rawListed(temporalClient, 1000) },
    ];
    const measured = probes.map(() => ({ wall: [] as number[], server: [] as number[], caller: [] as number[], seen: new Set<number>() }));
    const uiPid = ui.pid;
    const callerCpu = (caller: 'ui' | 'here') => {
      if (caller === 'ui') return cpuMsOf(uiPid);
      const { user, system } = process.cpuUsage();
      return (user + system) / 1000;
    };
    for (let rep = -1; rep < REPS; rep++) {
      for (const [index, probe] of probes.entries()) {
        const serverBefore = cpuMsOf(server.process.pid!);
        const callerBefore = callerCpu(probe.caller);
        const began = performance.now();
        const seen = await probe.run();
        const wall = performance.now() - began;
        // The first round warms up and is not counted.
        if (rep < 0) continue;
        const entry = measured[index]!;
        entry.wall.push(wall);
        entry.seen.add(seen);
        const serverAfter = cpuMsOf(server.process.pid!);
        const callerAfter = callerCpu(probe.caller);
        if (serverBefore !== undefined && serverAfter !== undefined) entry.server.push(serverAfter - serverBefore);
        if (callerBefore !== undefined && callerAfter !== undefined) entry.caller.push(callerAfter - callerBefore);
      }
    }
    const afterInbox = await ui.memory();
    const shown = (values: number[]) => `median ${median(values).toFixed(0)} ms, p90 ${percentile(values, 90).toFixed(0)} ms`;
    const cpu = (values: number[]) => (values.length ? `${median(values).toFixed(0)} ms` : '-');
    console.log(
      `inbox: ${REPS} interleaved repetitions each, ${RUNS} waiting runs; CPU: the dev server's and the caller's (UI child or this process), medians`,
    );
    for (const [index, probe] of probes.entries()) {
      const entry = measured[index]!;
      console.log(
        `  ${probe.label.padEnd(42)} ${shown(entry.wall)}  server CPU ${cpu(entry.server)}, caller CPU ${cpu(entry.caller)}  (${[...entry.seen].join('/')} seen)`,
      );
    }
    console.log(`  GET /api/inbox, all: ${measured[0]!.wall.map((value) => value.toFixed(0)).join(', ')}`);
    console.log(`  client.workflow.list, all: ${measured[2]!.wall.map((value) => value.toFixed(0)).join(', ')}`);
    const inboxMedian = median(measured[0]!.wall);
    const listingMedian = median(measured[2]!.wall);
    console.log(`  ratio inbox / listing: ${(inboxMedian / listingMedian).toFixed(2)}  (goal: inbox < 1000 ms)`);
    result(`inbox: GET /api/inbox, ${RUNS} holds (ms, median)`, inboxMedian, '< 1000', inboxMedian < 1000);
    result('inbox: GET /api/inbox p90 (ms)', percentile(measured[0]!.wall, 90), '');
    result(`inbox: visibility listing of the same ${RUNS} runs (ms, median)`, listingMedian, '');
    result('inbox: inbox / visibility listing', inboxMedian / listingMedian, '');
    if (measured[0]!.server.length) result('inbox: dev server CPU per inbox request (ms, median)', median(measured[0]!.server), '');

    // 2. SSE: one client per run on SSE_CLIENTS runs for SSE_S, then they leave. CPU per second of
    // the dev server, the UI child and this process while they follow, against 5 s of none of it.
    const cpuRate = async (during: () => Promise<unknown>) => {
      const serverBefore = cpuMsOf(server.process.pid!);
      const uiBefore = cpuMsOf(uiPid);
      const hereBefore = callerCpu('here')!;
      const began = Date.now();
      await during();
      const seconds = (Date.now() - began) / 1000;
      const serverAfter = cpuMsOf(server.process.pid!);
      const uiAfter = cpuMsOf(uiPid);
      const here = `this process (the worker, the SSE clients) ${((callerCpu('here')! - hereBefore) / seconds).toFixed(0)} ms/s`;
      return serverBefore === undefined || serverAfter === undefined || uiBefore === undefined || uiAfter === undefined
        ? here
        : `dev server CPU ${((serverAfter - serverBefore) / seconds).toFixed(0)} ms/s, UI server ${((uiAfter - uiBefore) / seconds).toFixed(0)} ms/s, ${here}`;
    };
    const idle = await cpuRate(() => sleep(5000));
    const pages = runIds.slice(0, SSE_CLIENTS).map((runId) => ({ runId, leave: new AbortController(), events: 0, bytes: 0 }));
    const reading = pages.map(async (page) => {
      try {
        const response = await fetch(`${ui!.origin}/api/runs/${page.runId}/events`, { signal: page.leave.signal });
        const decoder = new TextDecoder();
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          page.bytes += chunk.length;
          page.events += (decoder.decode(chunk, { stream: true }).match(/^event: /gm) ?? []).length;
        }
      } catch {
        // aborted: the page left
      }
    });
    const following = await cpuRate(() => sleep(SSE_S * 1000));
    const duringSse = await ui.memory();
    for (const page of pages) page.leave.abort();
    await Promise.all(reading);
    const left = Date.now();
    let afterSse = await ui.memory();
    while (afterSse.watched > 0 && Date.now() - left < 30_000) {
      await sleep(250);
      afterSse = await ui.memory();
    }
    const leftMs = Date.now() - left;
    console.log(
      `sse: ${SSE_CLIENTS} clients on ${SSE_CLIENTS} runs for ${SSE_S} s: ${pages.reduce((sum, page) => sum + page.events, 0)} events, ${(pages.reduce((sum, page) => sum + page.bytes, 0) / 1024).toFixed(0)} KiB; runs watched ${duringSse.watched} while open, ${afterSse.watched} ${(leftMs / 1000).toFixed(1)} s after they left`,
    );
    console.log(`  while they follow: ${following}\n  idle before, 5 s: ${idle}`);

    // 3. Back-to-back inbox requests for SOAK_S, memory after each half.
    const soak: number[] = [];
    const halves: Array<{ memory: MemoryReport; requests: number }> = [];
    for (let half = 0; half < 2; half++) {
      const until = Date.now() + (SOAK_S * 1000) / 2;
      while (Date.now() < until) {
        const began = performance.now();
        await probes[0]!.run();
        soak.push(performance.now() - began);
      }
      halves.push({ memory: await ui.memory(), requests: soak.length });
    }
    console.log(`soak: ${soak.length} inbox requests back to back in ${SOAK_S} s, ${shown(soak)}`);

    const rows: Array<[string, MemoryReport]> = [
      ['after startup', startup],
      [`after ${REPS + 1} inbox requests`, afterInbox],
      [`${SSE_CLIENTS} SSE clients open (${SSE_S} s)`, duringSse],
      ['SSE clients gone', afterSse],
      [`soak, first half (${halves[0]!.requests} requests)`, halves[0]!.memory],
      [`soak, second half (${halves[1]!.requests} requests)`, halves[1]!.memory],
    ];
    console.log(`memory of the UI server (child pid ${ui.pid}, node --expose-gc, after a full GC):`);
    for (const [label, memory] of rows)
      console.log(
        `  ${label.padEnd(36)} heap ${MiB(memory.heapUsed).padStart(6)} MiB (total ${MiB(memory.heapTotal)}), rss ${MiB(memory.rss).padStart(6)} MiB, external ${MiB(memory.external)} MiB, watched ${memory.watched}`,
      );
    const grew = halves[1]!.memory.heapUsed - afterInbox.heapUsed;
    console.log(`  heap after the soak minus after the first inbox requests: ${grew >= 0 ? '+' : ''}${MiB(grew)} MiB`);
    result('ui server: heap after startup (MiB)', startup.heapUsed / 2 ** 20, '');
    result(`ui server: heap after ${REPS + 1} inbox requests (MiB)`, afterInbox.heapUsed / 2 ** 20, '');
    result(`ui server: heap once ${SSE_CLIENTS} SSE clients left (MiB)`, afterSse.heapUsed / 2 ** 20, 'as before');
    result(`ui server: heap after ${soak.length} more inbox requests (MiB)`, halves[1]!.memory.heapUsed / 2 ** 20, 'as before');
    result('ui server: rss after all of it (MiB)', halves[1]!.memory.rss / 2 ** 20, '');
    result('ui server: runs watched once the SSE clients left', afterSse.watched, '0');
  } finally {
    await ui?.stop();
    await bench.stop();
  }
}

if (process.argv[2] === 'serve')
  void serve().catch((error) => {
    console.error(error);
    process.exit(1);
  });
else
  void main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
