/**
 * Starts an in-process keel worker on a task queue of its own against the shared dev
 * server, with a registry the test builds (scripted models, test tools).
 */
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, inject } from 'vitest';
import { KeelClient } from '../../src/client/keel-client';
import { defineConfig } from '../../src/config/load';
import type { KeelConfig, KeelConfigInput } from '../../src/config/schema';
import { Registry } from '../../src/registry';
import { connectClient, connectWorker } from '../../src/worker/connect';
import { createKeelWorker } from '../../src/worker/create-worker';

let runtimeInstalled = false;

/** Log entries of warning level and above from workers in this test process (workflow logs included). */
export const capturedLogs: LogEntry[] = [];

/** Captures SDK and workflow logs instead of printing them; errors are still printed (once per process). */
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({
      logger: new DefaultLogger('WARN', (entry) => {
        capturedLogs.push(entry);
        if (entry.level === 'ERROR') console.error(entry.message, entry.meta ?? '');
      }),
    });
  } catch {
    // already installed by another helper in this process
  }
}

/** A running test worker and a client on its queue. */
export interface TestWorker {
  client: KeelClient;
  config: KeelConfig;
  taskQueue: string;
  stop: () => Promise<void>;
}

/** Config pointing at the shared test server, with a fresh task queue. */
export function testConfig(overrides: KeelConfigInput = {}): KeelConfig {
  return defineConfig({
    taskQueue: `test-${randomUUID()}`,
    ...overrides,
    temporal: { address: inject('temporalAddress'), ...overrides.temporal },
    // A test's worker is the only one on its queue: what it lacks, no other has.
    worker: { notRegisteredRetryFor: '2 seconds', ...overrides.worker },
  });
}

/** Starts a worker for `registry`; call `stop()` in afterEach/afterAll. */
export async function startTestWorker(registry: Registry, overrides: KeelConfigInput = {}): Promise<TestWorker> {
  quietRuntime();
  const config = testConfig(overrides);
  const [connection, temporal] = await Promise.all([connectWorker(config), connectClient(config)]);
  // The shared bundle has the built-in middleware only; a config with middleware modules gets its own.
  const bundlePath = config.middlewareModules.length ? undefined : inject('bundlePath');
  const worker = await createKeelWorker({ config, registry, connection, client: temporal, bundlePath });
  const running = worker.run();
  const client = new KeelClient({ temporal, taskQueue: config.taskQueue, fairness: config.fairness });
  return {
    client,
    config,
    taskQueue: config.taskQueue,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
      await temporal.connection.close();
    },
  };
}

/**
 * Starts a worker for `registry` before a file's tests and stops it after them; returns a
 * function giving that worker (call it inside tests).
 */
export function sharedTestWorker(registry: Registry, overrides: KeelConfigInput = {}): () => TestWorker {
  let worker: TestWorker | undefined;
  beforeAll(async () => {
    worker = await startTestWorker(registry, overrides);
  });
  afterAll(async () => {
    await worker?.stop();
  });
  return () => {
    if (!worker) throw new Error('the test worker is not running yet (call this inside a test)');
    return worker;
  };
}
