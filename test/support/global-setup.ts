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

let server: DevServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  const binary = findTemporalBinary(defineConfig({}));
  // The page keel ui serves, rebuilt when ui/ changed since the last build.
  const [port, bundlePath] = await Promise.all([freePort(), workflowBundlePath(), buildUi({ ifStale: true })]);
  server = await startDevServer({ binary, port, headless: true, logLevel: 'error' });
  project.provide('temporalAddress', server.address);
  project.provide('temporalBinary', binary);
  project.provide('bundlePath', bundlePath);
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
