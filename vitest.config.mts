import { resolve } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';

// vitest runs from the repository root.
const source = (path: string) => resolve(path);

export default defineConfig({
  // The examples import keel by its package name: in this checkout that is the sources (as
  // tsconfig's paths say for tsx), not a dist/ that `npm pack` may have built.
  resolve: {
    alias: [
      { find: /^keel-agents$/, replacement: source('./src/index.ts') },
      { find: /^keel-agents\/workflow$/, replacement: source('./src/workflows/index.ts') },
      { find: /^keel-agents\/middleware$/, replacement: source('./src/middleware/index.ts') },
      { find: /^keel-agents\/protocol$/, replacement: source('./src/protocol.ts') },
      { find: /^keel-agents\/testing$/, replacement: source('./src/testing.ts') },
    ],
  },
  test: {
    globalSetup: ['./test/support/global-setup.ts'],
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // The cluster lane runs on its own: npm run test:cluster (vitest.cluster.config.mts).
    exclude: [...configDefaults.exclude, 'test/cluster/**'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
