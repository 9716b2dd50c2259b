/**
 * Bundles the workflow code (plus any middleware modules the config lists) once and caches
 * the bundle on disk, keyed by a hash of the sources it is built from, so a worker (or a
 * test) starts in a second after the first build. Node side.
 */
import { bundleWorkflowCode, type BundleOptions } from '@temporalio/worker';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { PACKAGE_ROOT } from '../node/package-root';

/** keel's own code: src/ in a checkout (run through tsx), dist/ in the installed package. */
const CODE_DIR = resolve(__dirname, '..');
/** `.ts` in a checkout, `.js` once built. */
const CODE_EXTENSION = __filename.endsWith('.ts') ? '.ts' : '.js';
/** The workflow entry point. */
export const WORKFLOWS_PATH = join(CODE_DIR, 'workflows', `index${CODE_EXTENSION}`);
/** The workflow types a keel worker registers: what src/workflows/index.ts exports (bundle.test.ts holds them equal). */
export const WORKFLOW_TYPES: readonly string[] = ['generateWorkflow', 'sessionWorkflow', 'keelHoldNotice', 'keelForkCheck', 'keelEvalSuite', 'keelSpendLedger'];
/** The workflow interceptor module every bundle has: logs name the run's agent and turn. */
const LOG_ATTRIBUTES_PATH = join(CODE_DIR, 'workflows', `log-attributes${CODE_EXTENSION}`);
/** The workflow's payload converter: the default one, tolerant of payloads it cannot decode (a signal then is refused, not fatal). */
const PAYLOAD_CONVERTER_PATH = join(CODE_DIR, 'workflows', `payload-converter${CODE_EXTENSION}`);
/** zod, configured before anything builds a schema: the first module each workflow thread evaluates for all its runs (see the module). */
const SHARED_MODULES_PATH = join(CODE_DIR, 'workflows', `shared-modules${CODE_EXTENSION}`);
/** The last module a workflow thread preloads: readies the shared zod schemas for the SDK's freeze (see the module). */
const SHARED_SCHEMAS_PATH = join(CODE_DIR, 'workflows', `shared-schemas${CODE_EXTENSION}`);
/** The middleware catalog, which the entry of a bundle with middleware modules registers its modules in. */
const CATALOG_PATH = join(CODE_DIR, 'features', `catalog${CODE_EXTENSION}`);
/**
 * What `keel-agents/workflow` and `keel-agents/middleware` mean inside a bundle: this keel's
 * own code, whichever copy a middleware module would otherwise resolve, so the bundle holds
 * one middleware catalog. Exact matches: `keel-agents/workflow/x` is not aliased.
 */
const BUNDLE_ALIASES: Record<string, string> = {
  'keel-agents/workflow': WORKFLOWS_PATH,
  'keel-agents/middleware': join(CODE_DIR, 'features', `index${CODE_EXTENSION}`),
};

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const full = join(dir, entry);
    if (statSync(full).isDirectory()) out.push(...sourceFiles(full));
    else if (entry.endsWith(CODE_EXTENSION) && !entry.endsWith('.test.ts') && !entry.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** The version of an installed package, or '' when it cannot be read. */
function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')) as { version?: string }).version ?? '';
  } catch {
    return '';
  }
}

/**
 * Hash of keel's code, the lockfile (in a checkout) or the Temporal SDK's version, and each
 * middleware module with the other sources in its folder: a change to any of them means a
 * new bundle.
 */
export function bundleHash(middlewareModules: readonly string[] = []): string {
  const hash = createHash('sha256');
  for (const file of sourceFiles(CODE_DIR)) {
    hash.update(file.slice(CODE_DIR.length)).update(readFileSync(file));
  }
  for (const module of middlewareModules) {
    hash.update(module);
    const folder = dirname(module);
    for (const entry of readdirSync(folder).sort()) {
      const full = join(folder, entry);
      if (/\.[cm]?[jt]s$/.test(entry) && statSync(full).isFile()) hash.update(full).update(readFileSync(full));
    }
  }
  const lock = join(PACKAGE_ROOT, 'package-lock.json');
  if (existsSync(lock)) hash.update(readFileSync(lock));
  hash.update(packageVersion('@temporalio/workflow'));
  return hash.digest('hex').slice(0, 16);
}

/** Options of `workflowBundlePath`. */
export interface WorkflowBundleOptions {
  cacheDir?: string;
  /** Absolute paths of modules that register middleware; bundled before the workflow. */
  middlewareModules?: readonly string[];
  /** Workflow interceptor modules to bundle (OpenTelemetry's, when tracing). */
  workflowInterceptorModules?: readonly string[];
}

/**
 * Path of a bundle of the current workflow code, building it if the cache has none. The cache
 * is `.keel/cache` of the working directory unless `cacheDir` says otherwise.
 */
export async function workflowBundlePath({
  cacheDir = resolve('.keel', 'cache'),
  middlewareModules = [],
  workflowInterceptorModules = [],
}: WorkflowBundleOptions = {}): Promise<string> {
  const key = bundleHash([...middlewareModules, ...workflowInterceptorModules]);
  const path = join(cacheDir, `workflow-bundle-${key}.js`);
  if (existsSync(path)) return path;
  mkdirSync(cacheDir, { recursive: true });
  let workflowsPath = WORKFLOWS_PATH;
  if (middlewareModules.length) {
    // An entry that registers the middleware the modules export (or register) before the workflow runs.
    workflowsPath = join(cacheDir, `workflow-entry-${key}.ts`);
    const source = (path: string) => JSON.stringify(path.replace(/\.[jt]s$/, ''));
    const lines = [
      `import { registerExportedMiddleware } from ${source(CATALOG_PATH)};`,
      ...middlewareModules.map((module, index) => `import * as middleware${index} from ${JSON.stringify(module)};`),
      ...middlewareModules.map((_module, index) => `registerExportedMiddleware(middleware${index});`),
      // Every workflow of the entry (a list here once left out the ones added after it).
      `export * from ${source(WORKFLOWS_PATH)};`,
    ];
    writeFileSync(workflowsPath, `${lines.join('\n')}\n`);
  }
  const { code } = await bundleWorkflowCode(keelBundleOptions(workflowsPath, workflowInterceptorModules));
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, code);
  renameSync(temporary, path);
  return path;
}

/**
 * The options keel bundles a workflow entry with: its payload converter, its log interceptor
 * (plus `workflowInterceptorModules`), the `keel-agents/*` aliases, and what a workflow thread
 * loads once and shares between all its runs (the SDK's `preloadModules`): zod, then the entry
 * with every module it imports (keel's workflow code, the middleware modules a config lists).
 * A run then evaluates only the SDK's per-run modules and the interceptor modules nothing else
 * imports. The last preloaded module readies the shared zod schemas for the SDK's deep freeze
 * (src/workflows/shared-schemas.ts). Shared modules keep no mutable state (the lint's `keel/no-module-state`), and the SDK
 * deep-freezes what they export. Exported so that benchmarks bundle their own entries as keel does.
 */
export function keelBundleOptions(workflowsPath: string, workflowInterceptorModules: readonly string[] = []): BundleOptions {
  return {
    workflowsPath,
    payloadConverterPath: PAYLOAD_CONVERTER_PATH,
    logger: quietLogger,
    preloadModules: [SHARED_MODULES_PATH, workflowsPath, SHARED_SCHEMAS_PATH],
    // Not the SDK's defaultWorkflowInterceptorModules: a deprecated no-op now that the SDK logs a workflow's lifecycle itself.
    workflowInterceptorModules: [LOG_ATTRIBUTES_PATH, ...workflowInterceptorModules],
    webpackConfigHook: (webpackConfig) => {
      // webpack takes aliases as an object (`name$`: exact match) or as a list of { name, alias, onlyModule }: add ours in the form given.
      const given = webpackConfig.resolve?.alias;
      const ours = Object.entries(BUNDLE_ALIASES);
      const alias = Array.isArray(given)
        ? [...given, ...ours.map(([name, target]) => ({ name, alias: target, onlyModule: true }))]
        : { ...given, ...Object.fromEntries(ours.map(([name, target]) => [`${name}$`, target])) };
      return { ...webpackConfig, resolve: { ...webpackConfig.resolve, alias } };
    },
  };
}

const noop = (): void => undefined;
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: (message: string) => console.error(message), log: noop };
