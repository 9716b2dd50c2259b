/**
 * Starts one Temporal dev server (in memory, headless, on a free port) for all test files
 * and builds the workflow bundle (and keel ui's page, when stale) once. Each test then uses its own task queue.
 */
import type { TestProject } from 'vitest/node';
import { defineConfig } from '../../src/config/load';
import { findTemporalBinary, startDevServer, type DevServer } from '../../src/server/dev-server';
import { workflowBundlePath } from '../../src/worker/bundle';
import { freePort } from './free-port';
import { buildUi } from '../../scripts/build-ui';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalBinary: string;
    bundlePath: string;
  }
}

/** What the setup made, kept on the main process's global: each project of vitest.config.mts runs this setup, and all share one server. */
interface Shared {
  ready: Promise<{ server: DevServer; binary: string; bundlePath: string }>;
  users: number;
}
const slot = globalThis as typeof globalThis & { keelTestSetup?: Shared };

export async function setup(project: TestProject): Promise<void> {
  const shared = (slot.keelTestSetup ??= { ready: start(), users: 0 });
  shared.users++;
  const { server, binary, bundlePath } = await shared.ready;
  project.provide('temporalAddress', server.address);
  project.provide('temporalBinary', binary);
  project.provide('bundlePath', bundlePath);
}

async function start(): Promise<{ server: DevServer; binary: string; bundlePath: string }> {
  const binary = findTemporalBinary(defineConfig({}));
  // The page keel ui serves, rebuilt when ui/ changed since the last build.
  const [port, bundlePath] = await Promise.all([freePort(), workflowBundlePath(), buildUi({ ifStale: true })]);
  const server = await startDevServer({ binary, port, headless: true, logLevel: 'error' });
  return { server, binary, bundlePath };
}

export async function teardown(): Promise<void> {
  const shared = slot.keelTestSetup;
  if (!shared || --shared.users > 0) return;
  slot.keelTestSetup = undefined;
  await (await shared.ready).server.stop();
}
