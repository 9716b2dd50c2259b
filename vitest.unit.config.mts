import { defineConfig } from 'vitest/config';
import base from './vitest.config.mjs';

// The fast lane (`npm run test:unit`): the unit tests beside the source, middleware run through
// the in-memory harness (keel-agents/testing) included. No Temporal dev server is started.
export default defineConfig({
  ...base,
  test: { ...base.test, include: ['src/**/*.test.ts'], globalSetup: [] },
});
