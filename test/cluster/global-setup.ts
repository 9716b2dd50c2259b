/**
 * Before the cluster lane: the Temporal server binaries (built once by
 * scripts/install-temporal-server.sh, cached in .keel/bin), the temporal CLI (the operator's
 * client, as `npm run setup` installs it) and the workflow bundle the workers share, once. Each
 * test file starts its own cluster (test/support/cluster), so that it may restart it.
 */
import type { TestProject } from 'vitest/node';
import { defineConfig } from '../../src/config/load';
import { findTemporalBinary } from '../../src/server/dev-server';
import { workflowBundlePath } from '../../src/worker/bundle';
import { ROOT } from '../support/processes';
import { installServerBinaries, type ServerBinaries } from '../support/cluster';

declare module 'vitest' {
  export interface ProvidedContext {
    serverBinaries: ServerBinaries;
  }
}

export async function setup(project: TestProject): Promise<void> {
  project.provide('serverBinaries', installServerBinaries(ROOT));
  project.provide('temporalBinary', findTemporalBinary(defineConfig({})));
  project.provide('bundlePath', await workflowBundlePath());
}
