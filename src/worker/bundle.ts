/**
 * Bundles the workflow code (plus any middleware modules the config lists) once and caches
 * the bundle on disk, keyed by a hash of the sources it is built from, so a worker (or a
 * test) starts in a second after the first build. Node side.
 */
import { bundleWorkflowCode } from '@temporalio/worker';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** Root of the keel package (where package.json lives). */
export const PACKAGE_ROOT = resolve(__dirname, '..', '..');
/** The workflow entry point. */
export const WORKFLOWS_PATH = join(PACKAGE_ROOT, 'src', 'workflows', 'index.ts');
/** The middleware registry, which the entry of a bundle with middleware modules calls. */
const REGISTRY_PATH = join(PACKAGE_ROOT, 'src', 'middleware', 'registry.ts');

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const full = join(dir, entry);
    if (statSync(full).isDirectory()) out.push(...sourceFiles(full));
    else if (entry.endsWith('.ts') && !entry.endsWith('.test.ts')) out.push(full);
  }
  return out;
}

/**
 * Hash of every source file, the lockfile, and each middleware module with the other
 * sources in its folder: a change to any of them means a new bundle.
 */
export function bundleHash(middlewareModules: readonly string[] = []): string {
  const hash = createHash('sha256');
  for (const file of sourceFiles(join(PACKAGE_ROOT, 'src'))) {
    hash.update(file.slice(PACKAGE_ROOT.length)).update(readFileSync(file));
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
  return hash.digest('hex').slice(0, 16);
}

/** Options of `workflowBundlePath`. */
export interface WorkflowBundleOptions {
  cacheDir?: string;
  /** Absolute paths of modules that register middleware; bundled before the workflow. */
  middlewareModules?: readonly string[];
}

/** Path of a bundle of the current workflow code, building it if the cache has none. */
export async function workflowBundlePath({ cacheDir = join(PACKAGE_ROOT, '.keel', 'cache'), middlewareModules = [] }: WorkflowBundleOptions = {}): Promise<string> {
  const key = bundleHash(middlewareModules);
  const path = join(cacheDir, `workflow-bundle-${key}.js`);
  if (existsSync(path)) return path;
  mkdirSync(cacheDir, { recursive: true });
  let workflowsPath = WORKFLOWS_PATH;
  if (middlewareModules.length) {
    // An entry that registers the middleware the modules export (or register) before the workflow runs.
    workflowsPath = join(cacheDir, `workflow-entry-${key}.ts`);
    const source = (path: string) => JSON.stringify(path.replace(/\.ts$/, ''));
    const lines = [
      `import { registerExportedMiddleware } from ${source(REGISTRY_PATH)};`,
      ...middlewareModules.map((module, index) => `import * as middleware${index} from ${JSON.stringify(module)};`),
      ...middlewareModules.map((_module, index) => `registerExportedMiddleware(middleware${index});`),
      `export { generateWorkflow, sessionWorkflow } from ${source(WORKFLOWS_PATH)};`,
    ];
    writeFileSync(workflowsPath, `${lines.join('\n')}\n`);
  }
  const { code } = await bundleWorkflowCode({ workflowsPath, logger: quietLogger });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, code);
  renameSync(temporary, path);
  return path;
}

const noop = (): void => undefined;
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: (message: string) => console.error(message), log: noop };
