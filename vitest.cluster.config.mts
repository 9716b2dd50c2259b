import { defineConfig } from 'vitest/config';
import base from './vitest.config.mjs';

// The cluster lane (`npm run test:cluster`, docs/production.md, "A production-shaped Temporal"): keel against the
// Temporal server binary on PostgreSQL with mTLS, each file starting and stopping its own cluster.
// `npm test` leaves it out (vitest.config.mts excludes test/cluster).
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['test/cluster/**/*.test.ts'],
    exclude: [],
    globalSetup: ['./test/cluster/global-setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 180_000,
  },
});
