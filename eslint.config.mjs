// Lint: typescript-eslint's recommended rules everywhere, and the sandbox line made an
// error: workflow code may not import Node built-ins or I/O libraries.
import tseslint from 'typescript-eslint';

const nodeBuiltins = ['assert', 'buffer', 'child_process', 'cluster', 'crypto', 'dgram', 'dns', 'events', 'fs', 'fs/promises', 'http', 'http2', 'https', 'net', 'os', 'path', 'perf_hooks', 'process', 'readline', 'stream', 'timers', 'tls', 'url', 'util', 'v8', 'vm', 'worker_threads', 'zlib'];

export default tseslint.config(
  { ignores: ['node_modules/**', '.keel/**', 'dist/**', 'bin/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/workflows/**/*.ts', 'src/middleware/**/*.ts', 'src/core/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.map((name) => ({ name, message: 'Workflow code runs in the Temporal sandbox: no Node built-ins. Do I/O in an activity.' })),
            { name: 'js-tiktoken', message: 'Count tokens in an activity: js-tiktoken bloats every workflow bundle.' },
            { name: '@temporalio/client', message: 'Workflow code may not use the client: use @temporalio/workflow APIs.' },
            { name: '@temporalio/worker', message: 'Workflow code may not import the worker.' },
            { name: '@temporalio/activity', message: 'Workflow code may not import activity APIs.' },
          ],
          patterns: [
            { group: ['node:*'], message: 'Workflow code runs in the Temporal sandbox: no Node built-ins.' },
            { group: ['**/activities/*', '!**/activities/types'], allowTypeImports: true, message: 'Workflow code imports activities by type only (proxyActivities<KeelActivities>).' },
            { group: ['**/models/*', '**/worker/*', '**/server/*', '**/client/*', '**/config/*'], message: 'Node-side module: not for workflow code.' },
          ],
        },
      ],
    },
  },
);
