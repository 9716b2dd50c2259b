import { defineConfig } from 'vitest/config';
import base from './vitest.config.mjs';

// A lane of its own: none of the main run's projects.
const { projects: _projects, ...baseTest } = base.test ?? {};

// The fast lane (`npm run test:unit`): the unit tests beside the source, middleware run through
// the in-memory harness (keel-agents/testing) included. No Temporal dev server is started.
export default defineConfig({
  ...base,
  test: { ...baseTest, include: ['src/**/*.test.ts'], globalSetup: [] },
});
