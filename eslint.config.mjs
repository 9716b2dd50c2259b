// Lint: typescript-eslint's recommended rules everywhere, type-aware where a review keeps
// catching the same mistake (a promise nobody awaits), and the sandbox line made an error:
// workflow code may not import Node built-ins or I/O libraries. The Node side keeps its layers
// too (docs/architecture.md): nothing imports from a layer above it.
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

/** Every Node built-in, by bare name (`fs`, `fs/promises`, ...); `node:` names are a pattern below. */
const nodeBuiltins = builtinModules.filter((name) => !name.startsWith('_'));

/** A lint block: `files` may not import from the folders `above` (they belong to higher layers). */
function layer(files, above) {
  return [
    {
      files,
      ignores: ['**/*.test.ts'],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              { group: above.map((folder) => `**/${folder}/*`), message: `A higher layer (docs/architecture.md): move what both need down, or the code up.` },
            ],
          },
        ],
      },
    },
  ];
}

export default tseslint.config(
  { ignores: ['node_modules/**', '.keel/**', 'dist/**', 'bin/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // As Temporal's samples do, "for safety": a floating promise in a workflow or a handler loses its error.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
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
            {
              group: ['**/activities/*', '!**/activities/types'],
              allowTypeImports: true,
              message: 'Workflow code imports activities by type only (proxyActivities<KeelActivities>).',
            },
            { group: ['**/models/*', '**/worker/*', '**/server/*', '**/client/*', '**/config/*'], message: 'Node-side module: not for workflow code.' },
          ],
        },
      ],
    },
  },
  // The Node side's layers, bottom up: core and node/ helpers, config; models, tools, storage,
  // telemetry, security, activities; server and worker; client (and the CLI). No import goes up.
  ...layer(
    ['src/node/**/*.ts', 'src/config/**/*.ts'],
    ['activities', 'models', 'tools', 'storage', 'telemetry', 'security', 'middleware', 'client', 'worker', 'server'],
  ),
  ...layer(
    ['src/models/**/*.ts', 'src/tools/**/*.ts', 'src/storage/**/*.ts', 'src/telemetry/**/*.ts', 'src/security/**/*.ts', 'src/activities/**/*.ts'],
    ['client', 'worker', 'server'],
  ),
  ...layer(['src/server/**/*.ts'], ['client', 'worker']),
  ...layer(['src/worker/**/*.ts'], ['client', 'server']),
);
