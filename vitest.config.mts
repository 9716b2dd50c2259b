import { resolve } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';

// vitest runs from the repository root.
const source = (path: string) => resolve(path);

/** The files that run without isolation (see `projects` below): unit tests, and in-process runs on the shared dev server. */
const SHARED_TESTS = [
  'agents',
  'anthropic',
  'api-report',
  'budget-spec',
  'compression',
  'compression-reference',
  'compression-view',
  'config-file',
  'cost',
  'custom-middleware',
  'fallback-spec',
  'filesystem',
  'idempotency-keys',
  'holds',
  'json-schemas',
  'large-payloads',
  'local-calls',
  'long-runs',
  'loop-spec',
  'mcp',
  'mcp-misbehaving',
  'payload-limit-none',
  'python-client',
  'rate-limit',
  'reset',
  'retry-spec',
  'run-lifecycle',
  'sessions',
  'skills',
  'soft-tool-errors-spec',
  'steering',
  'steering-hold',
  'steering-loop-end',
  'tool-approval-spec',
  'tool-output-schema',
  'tree-budget',
  'ui-server',
  'visibility',
  'zod3-compat',
].map((name) => `test/${name}.test.ts`);
/** The one unit test that installs a process-wide provider (OpenTelemetry's). */
const ISOLATED_UNIT = 'src/telemetry/tracing.test.ts';

export default defineConfig({
  // The examples import keel by its package name: in this checkout that is the sources (as
  // tsconfig's paths say for tsx), not a dist/ that `npm pack` may have built.
  resolve: {
    alias: [
      { find: /^keel-agents$/, replacement: source('./src/index.ts') },
      { find: /^keel-agents\/workflow$/, replacement: source('./src/workflows/index.ts') },
      { find: /^keel-agents\/middleware$/, replacement: source('./src/features/index.ts') },
      { find: /^keel-agents\/protocol$/, replacement: source('./src/protocol.ts') },
      { find: /^keel-agents\/testing$/, replacement: source('./src/testing.ts') },
    ],
  },
  test: {
    globalSetup: ['./test/support/global-setup.ts'],
    // What each project includes is its own (a project extending this config would add to an include here).
    // The cluster lane runs on its own: npm run test:cluster (vitest.cluster.config.mts).
    exclude: [...configDefaults.exclude, 'test/cluster/**'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
    // Two lanes in one run. The files that keep no state beyond their own runs (each on its own task
    // queue, with its own agents and models) share their test processes and the modules loaded in
    // them (no isolation: about a second of imports saved per file). Every other file (processes of
    // its own, a Temporal runtime or OpenTelemetry provider installed per process, environment
    // variables, spies, captured logs) keeps a fresh process.
    projects: [
      {
        extends: true,
        test: { name: 'shared', include: ['src/**/*.test.ts', ...SHARED_TESTS], exclude: [...configDefaults.exclude, ISOLATED_UNIT], isolate: false },
      },
      {
        extends: true,
        test: { name: 'isolated', include: ['test/**/*.test.ts', ISOLATED_UNIT], exclude: [...configDefaults.exclude, 'test/cluster/**', ...SHARED_TESTS] },
      },
    ],
  },
});
