/**
 * What the benchmarks share: an embedded dev server of their own, a keel worker on it with
 * keel's own data converter, history sizes, and the 20 KiB tool. Not a test.
 */
import type { Client } from '@temporalio/client';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { KEEL_STATUS } from '../src/core/search-attributes';
import { GENERATE_WORKFLOW } from '../src/core/protocol';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { KeelClient } from '../src/client/keel-client';
import { defineConfig } from '../src/config/load';
import type { KeelConfigInput } from '../src/config/schema';
import { defineTool } from '../src/define';
import type { Registry } from '../src/registry';
import { findTemporalBinary, startDevServer, type DevServer } from '../src/server/dev-server';
import { connectClient, connectWorker } from '../src/worker/connect';
import { createKeelWorker } from '../src/worker/create-worker';
import { freePort } from '../test/support/free-port';

/** A tool returning 20 KiB per call (the long-conversation load). */
export const chunkTool = defineTool({
  name: 'chunk',
  description: 'Returns 20 KiB.',
  input: z.object({ turn: z.number() }),
  run: ({ turn }) => ({ turn, data: 'x'.repeat(20 * 1024) }),
});

/** An embedded dev server on a free port, SDK logs at ERROR. */
export async function startBenchServer(dynamicConfig: Record<string, unknown> = {}): Promise<DevServer> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  return startDevServer({ binary: findTemporalBinary(defineConfig({})), port: await freePort(), headless: true, logLevel: 'error', dynamicConfig });
}

/** A keel worker for `registry` on `server` (its own task queue), a client, and how to stop both and the server. */
export async function startBenchWorker(server: DevServer, registry: Registry, overrides: KeelConfigInput = {}) {
  const config = defineConfig({ taskQueue: `bench-${randomUUID()}`, ...overrides, temporal: { address: server.address } });
  const connection = await connectWorker(config);
  const temporalClient = await connectClient(config);
  const worker = await createKeelWorker({ config, registry, connection, client: temporalClient });
  const running = worker.run();
  return {
    client: new KeelClient({ temporal: temporalClient, taskQueue: config.taskQueue, fairness: config.fairness }),
    temporalClient,
    /** Stops the worker and its connections, and the server unless `{ server: false }`. */
    async stop({ server: withServer = true }: { server?: boolean } = {}): Promise<void> {
      worker.shutdown();
      await running;
      await connection.close();
      await temporalClient.connection.close();
      if (withServer) await server.stop();
    },
  };
}

/** Bytes of one run's history as the server stores it (the latest run of the id unless `runId`). */
export async function historyBytes(client: Client, workflowId: string, runId?: string): Promise<number> {
  return temporal.api.history.v1.History.encode(await client.workflow.getHandle(workflowId, runId).fetchHistory()).finish().length;
}

/** What the inbox lists (src/client/holds.ts, waitingRuns): runs waiting for a decision. */
export const WAITING = `WorkflowType='${GENERATE_WORKFLOW}' AND ExecutionStatus='Running' AND ${KEEL_STATUS.name}='waiting'`;

export const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** The value at percentile `p` (0–100) of `values`. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Waits until visibility lists `count` runs as waiting; prints progress. */
export async function untilWaiting(client: Client, count: number, timeoutMs = 15 * 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let shownAt = 0;
  for (;;) {
    const waiting = (await client.workflow.count(WAITING)).count;
    if (waiting >= count) return;
    if (Date.now() > deadline) throw new Error(`only ${waiting} of ${count} runs waiting after ${timeoutMs / 1000} s`);
    if (Date.now() - shownAt > 15_000) {
      console.log(`  ${waiting} of ${count} waiting`);
      shownAt = Date.now();
    }
    await sleep(1000);
  }
}

/** CPU time (ms) a process has used so far, from /proc (Linux, 100 ticks a second); undefined elsewhere. */
export function cpuMsOf(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** Resident memory (bytes) of a process, from /proc (Linux); undefined elsewhere. */
export function rssOf(pid: number): number | undefined {
  try {
    const kib = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kib === undefined ? undefined : Number(kib) * 1024;
  } catch {
    return undefined;
  }
}

/** Bytes of every file under `directory` (a payload store). */
export function storedBytes(directory: string): number {
  let total = 0;
  for (const entry of readdirSync(directory, { withFileTypes: true, recursive: true }))
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  return total;
}
