// Lint: typescript-eslint's strict and stylistic type-aware rules, less the ones that are noise
// in this codebase (each turned off below with the reason), and the sandbox line made an error:
// every module a workflow bundle pulls in may not import Node built-ins, I/O libraries or the
// Node side. And keel's layers (docs/architecture.md, "Layers"): every folder of src/ has its
// place in LAYERS, and nothing imports from a layer above its own.
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

/** Every Node built-in, by bare name (`fs`, `fs/promises`, ...); `node:` names are a pattern below. */
const nodeBuiltins = builtinModules.filter((name) => !name.startsWith('_'));

/**
 * Workflow code: every module a workflow bundle pulls in. keel's bundle (src/worker/bundle.ts)
 * reaches only src/workflows, src/features, src/engine, src/middleware and src/core (src/worker/sandbox-lint.test.ts
 * checks it); this repository also bundles the middleware modules its tests and docs list
 * under `middlewareModules`, and the workflow entries of a test and of the benchmark.
 */
const workflowCode = [
  'src/workflows/**/*.ts',
  'src/engine/**/*.ts',
  'src/middleware/**/*.ts',
  'src/core/**/*.ts',
  'src/features/**/*.ts',
  'examples/spending-gate.ts',
  'test/fixtures/notebook-middleware.ts',
  'test/fixtures/lingering-middleware.ts',
  'test/fixtures/patched-v1.ts',
  'test/fixtures/patched-v2.ts',
  'test/fixtures/unpatched-v2.ts',
  'test/fixtures/request-holder-workflows.ts',
  'bench/workflows.ts',
  'bench/baseline-workflow.ts',
];

/**
 * Workflow code keeps no module-level mutable state: a workflow thread loads keel's workflow
 * modules once and shares them between every run it holds (src/worker/bundle.ts), so a
 * module-level `let`, or a module-level Map, Set, array or object that code writes to, is
 * shared by those runs. Flags a module-level `let`/`var`, a reassigned module-level binding, and
 * a write through one (`x.a = 1`, `delete x.a`, `x.push()`, `x.set()`, `Object.assign(x, ...)`).
 * State a run needs lives in an object the run creates. A write the rule cannot see (through a
 * function the state is passed to) is what test/run-isolation.test.ts looks for at run time.
 */
const MUTATORS = new Set(['set', 'add', 'delete', 'clear', 'push', 'pop', 'shift', 'unshift', 'splice', 'sort', 'reverse', 'fill', 'copyWithin']);
const noModuleState = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    const report = (node, name, what) =>
      context.report({
        node,
        message: `module-level state: ${name} ${what}; every run of a workflow thread shares this module, so keep the state in an object the run creates`,
      });
    return {
      'Program:exit'(program) {
        const scope = context.sourceCode.getScope(program);
        const moduleScope = scope.childScopes.find((child) => child.type === 'module') ?? scope;
        for (const variable of moduleScope.variables) {
          const def = variable.defs[0];
          if (def?.type === 'Variable' && def.parent.kind !== 'const') report(def.name, variable.name, `is a module-level ${def.parent.kind}`);
          for (const reference of variable.references) {
            if (reference.init) continue;
            if (reference.isWrite()) {
              report(reference.identifier, variable.name, 'is reassigned');
              continue;
            }
            // Walk up `x.a.b`: a write to any member of the chain, or a mutating call on it, writes to the state.
            let node = reference.identifier;
            while (node.parent.type === 'MemberExpression' && node.parent.object === node) node = node.parent;
            const { parent } = node;
            if (node === reference.identifier) {
              const call = parent.type === 'CallExpression' && parent.arguments[0] === node ? parent.callee : undefined;
              const assigns =
                call?.type === 'MemberExpression' &&
                call.object.name === 'Object' &&
                ['assign', 'defineProperty', 'defineProperties'].includes(call.property.name);
              if (assigns) report(node, variable.name, `is written to by Object.${call.property.name}`);
              continue;
            }
            const written =
              (parent.type === 'AssignmentExpression' && parent.left === node) ||
              parent.type === 'UpdateExpression' ||
              (parent.type === 'UnaryExpression' && parent.operator === 'delete');
            const mutated = parent.type === 'CallExpression' && parent.callee === node && !node.computed && MUTATORS.has(node.property.name);
            if (written || mutated) report(node, variable.name, mutated ? `is changed by .${node.property.name}()` : 'has a member written to');
          }
        }
      },
    };
  },
};

/** keel's own lint rules. */
export const keelRules = { rules: { 'no-module-state': noModuleState } };

/**
 * keel's layers, bottom up: each entry is one layer, its folders (or, for define, registry and names with a slash,
 * files) of src/. A module may import its own layer and those below it, never one above; the
 * folders of a layer marked `apart` do not import each other either. The workflow side (core,
 * middleware, workflows) also keeps the sandbox rule below: whatever its place here, it imports
 * nothing of the Node side but activity types. The entry points at src/'s root (index.ts,
 * protocol.ts, testing.ts) stand above every layer.
 */
const LAYERS = [
  { names: ['core'] }, // both sides: schemas, the wire protocol, errors, pure helpers
  { names: ['node', 'config', 'define', 'registry'] }, // Node-side helpers, the config, definitions
  { names: ['middleware'] }, // workflow side: the middleware and its catalog
  { names: ['engine'] }, // workflow side: what the loop and the features share of Temporal (activity options and errors, versioning, proofs)
  { names: ['features'] }, // workflow side: each built-in's workflow half and the catalog (their Node halves, activities/ and features/activities.ts, sit with activities)
  { names: ['workflows'] }, // workflow side: the loop, which runs the catalog's features
  { names: ['models', 'tools', 'storage', 'telemetry', 'security', 'activities'] },
  { names: ['server', 'worker'], apart: true },
  { names: ['client'] }, // the typed client
  { names: ['protocols'] }, // keel's agents over other agents' protocols (MCP, A2A)
  { names: ['ops', 'ui'], apart: true }, // keel server/worker, namespace setup, deploy check; keel ui
  { names: ['dev'] }, // keel dev, init
  { names: ['cli'] }, // the keel command line
  { names: ['testing'] }, // keel-agents/testing's modules
];

/** The files of a layer's folder or file `name`. */
const filesOf = (name) => (['define', 'registry'].includes(name) || name.includes('/') ? [`src/${name}.ts`] : [`src/${name}/**/*.ts`]);

/** The folders and files a module of layer `index`'s `name` may not import. */
function above(index, name) {
  const later = LAYERS.slice(index + 1).flatMap((layer) => layer.names);
  return LAYERS[index].apart ? [...LAYERS[index].names.filter((other) => other !== name), ...later] : later;
}

/** Import patterns of the folders (or files) `names`, by relative path only: a package's own folders (`@temporalio/client/lib/...`) are not keel's layers. */
const relativePatterns = (names) => names.flatMap((name) => ['..', '../..', '../../..'].flatMap((up) => [`${up}/${name}`, `${up}/${name}/*`]));

/** The `no-restricted-imports` pattern that keeps a layer's module from importing `names`. */
const layerPattern = (names) => ({
  group: relativePatterns(names),
  message: 'A higher layer (docs/architecture.md, "Layers"): move what both need down, or the code up.',
});

/** The workflow side's layers: kept within the sandbox rule's block (a second block would replace its options). */
const WORKFLOW_SIDE = ['core', 'middleware', 'engine', 'features', 'workflows'];

/** The features' Node halves: each one's activities, and the catalog's list of them, in the activities layer. */
const FEATURE_ACTIVITIES = ['src/features/*/activities/**', 'src/features/activities.ts'];

/** The sandbox rule for `files`, with the layer `patterns` of their own. */
function sandbox(files, patterns) {
  return [
    {
      files,
      ignores: ['**/*.test.ts', ...FEATURE_ACTIVITIES],
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
              {
                name: 'keel-agents',
                message: "keel's root entry is Node side (models, client, worker): import keel-agents/middleware or keel-agents/workflow.",
              },
              { name: 'keel-agents/testing', message: 'keel-agents/testing starts dev servers: not for workflow code.' },
            ],
            patterns: [
              { group: ['node:*'], message: 'Workflow code runs in the Temporal sandbox: no Node built-ins.' },
              {
                group: ['**/activities/*'],
                allowTypeImports: true,
                message:
                  "Workflow code declares activities as doors (src/engine/activities.ts, a feature's own) and calls them through them; an implementation is Node side.",
              },
              {
                group: [
                  '**/models/*',
                  '**/tools/*',
                  '**/storage/*',
                  '**/telemetry/*',
                  '**/security/*',
                  '**/node/*',
                  '**/worker/*',
                  '**/server/*',
                  '**/client/*',
                  '**/config/*',
                  '**/ui/*',
                  '**/ops/*',
                  '**/dev/*',
                  '**/cli/*',
                  '**/testing/*',
                  ...relativePatterns(['define', 'registry']),
                ],
                message: 'Node-side module: not for workflow code.',
              },
              ...patterns,
            ],
          },
        ],
      },
    },
  ];
}

export default tseslint.config(
  { ignores: ['node_modules/**', '.keel/**', 'dist/**', 'dist.*/**', 'bin/**'] },
  ...tseslint.configs.strictTypeChecked,
  ...tseslint.configs.stylisticTypeChecked,
  {
    files: ['**/*.ts', '**/*.mts', '**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // As Temporal's samples do, "for safety": a floating promise in a workflow or a handler loses its error.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      // Numbers, booleans, regexps and possibly-undefined values print as meant in our messages; objects, unknown, any and never do not.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true, allowRegExp: true, allowNullish: true, allowAny: false, allowNever: false },
      ],
      // Spreading a string into code points is how we count characters; spreading an array into an object is still an error.
      '@typescript-eslint/no-misused-spread': ['error', { allow: ['string'] }],

      // Off: noise here.
      // With noUncheckedIndexedAccess, `!` is the idiom for an index or key the code has just established.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // `T[]` and `Array<T>` both read fine; converting 114 places buys nothing.
      '@typescript-eslint/array-type': 'off',
      // Narrowing does not see state changed by a handler across an await or in a callback (`while (!ended)`), nor the
      // `undefined` that JSON.stringify and a caught non-Error really give: its findings were defensive code, not dead code.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      // `() => handler(x)` and `return this.refuse(...)` are deliberate shorthands for void calls.
      '@typescript-eslint/no-confusing-void-expression': 'off',
      // An async function without await is deliberate: a throw becomes a rejection; dropping `async` would change that.
      '@typescript-eslint/require-await': 'off',
      // Our `||` defaults treat '' and 0 as unset on purpose; `??` would change behaviour.
      '@typescript-eslint/prefer-nullish-coalescing': 'off',
      // `a && a.b === c` and `a?.b === c` differ when c can be undefined; the rewrite is not worth checking case by case.
      '@typescript-eslint/prefer-optional-chain': 'off',
      // Local object shapes as `type` aliases are fine (and, unlike interfaces, assignable to Record<string, unknown>).
      '@typescript-eslint/consistent-type-definitions': 'off',
      // String() on a model-supplied unknown value is the deliberate coercion; objects in templates are caught above.
      '@typescript-eslint/no-base-to-string': 'off',
      // Return-type-only generics are our typed `require` helpers, and PayloadConverter's interface dictates toPayload<T>.
      '@typescript-eslint/no-unnecessary-type-parameters': 'off',
      // Entries of JSON-plain records (no Map in payloads, STYLE.md) are removed with `delete`.
      '@typescript-eslint/no-dynamic-delete': 'off',
      // Its findings were functions typed with method syntax (activities, a handle's stop) that never use `this`.
      '@typescript-eslint/unbound-method': 'off',
      // Its findings were in scripts and tests, where the rejection is always an Error.
      '@typescript-eslint/use-unknown-in-catch-callback-variable': 'off',
    },
  },
  // Plain JavaScript files are outside the TypeScript project: no type-aware rules there.
  { files: ['**/*.js', '**/*.mjs', '**/*.cjs'], ...tseslint.configs.disableTypeChecked },
  // CommonJS files load with require() by definition.
  { files: ['**/*.cjs'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
  {
    // Tests: vitest's asymmetric matchers (expect.stringContaining, expect.any) and JSON.parse of CLI output are `any` by design.
    files: ['test/**/*.ts', '**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  ...sandbox(
    workflowCode.filter((file) => !WORKFLOW_SIDE.some((name) => file === `src/${name}/**/*.ts`)),
    [],
  ),
  ...WORKFLOW_SIDE.map((name) => {
    const index = LAYERS.findIndex((layer) => layer.names.includes(name));
    // Activity types are the sandbox pattern's to allow (type imports only); core takes none.
    return sandbox(filesOf(name), [layerPattern(above(index, name).filter((other) => name === 'core' || other !== 'activities'))])[0];
  }),
  // The Node side's layers (LAYERS, the workflow side's taken above).
  ...LAYERS.flatMap((layer, index) =>
    layer.names
      .filter((name) => !WORKFLOW_SIDE.includes(name) && above(index, name).length > 0)
      .map((name) => ({
        files: filesOf(name),
        ignores: ['**/*.test.ts'],
        rules: { 'no-restricted-imports': ['error', { patterns: [layerPattern(above(index, name))] }] },
      })),
  ),
  {
    files: FEATURE_ACTIVITIES,
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            layerPattern(
              above(
                LAYERS.findIndex((layer) => layer.names.includes('activities')),
                'activities',
              ),
            ),
          ],
        },
      ],
    },
  },
  // Every module a workflow bundle pulls in shares its state with the thread's other runs.
  {
    files: workflowCode,
    ignores: ['**/*.test.ts', ...FEATURE_ACTIVITIES],
    plugins: { keel: keelRules },
    rules: { 'keel/no-module-state': 'error' },
  },
);
