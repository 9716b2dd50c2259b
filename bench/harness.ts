/**
 * What the benchmarks share: an embedded dev server of their own, a keel worker on it with
 * keel's own data converter, history sizes, and the 20 KiB tool. Not a test.
 */
import type { Client } from '@temporalio/client';
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
    client: new KeelClient({ temporal: temporalClient, taskQueue: config.taskQueue }),
    temporalClient,
    async stop(): Promise<void> {
      worker.shutdown();
      await running;
      await connection.close();
      await temporalClient.connection.close();
      await server.stop();
    },
  };
}

/** Bytes of one run's history as the server stores it (the latest run of the id unless `runId`). */
export async function historyBytes(client: Client, workflowId: string, runId?: string): Promise<number> {
  return temporal.api.history.v1.History.encode(await client.workflow.getHandle(workflowId, runId).fetchHistory()).finish().length;
}
