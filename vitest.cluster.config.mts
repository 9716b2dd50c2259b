import { defineConfig } from 'vitest/config';
import base from './vitest.config.mjs';

// A lane of its own: none of the main run's projects.
const { projects: _projects, ...baseTest } = base.test ?? {};

// The cluster lane (`npm run test:cluster`, docs/production.md, "A production-shaped Temporal"): keel against the
// Temporal server binary on PostgreSQL with mTLS, each file starting and stopping its own cluster.
// `npm test` leaves it out (vitest.config.mts excludes test/cluster).
export default defineConfig({
  ...base,
  test: {
    ...baseTest,
    include: ['test/cluster/**/*.test.ts'],
    exclude: [],
    globalSetup: ['./test/cluster/global-setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 180_000,
  },
});
