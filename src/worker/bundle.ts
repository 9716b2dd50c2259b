/**
 * Bundles the workflow code once and caches the bundle on disk, keyed by a hash of the
 * sources it is built from, so a worker (or a test) starts in a second after the first
 * build. Node side.
 */
import { bundleWorkflowCode } from '@temporalio/worker';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** Root of the keel package (where package.json lives). */
export const PACKAGE_ROOT = resolve(__dirname, '..', '..');
/** The workflow entry point. */
export const WORKFLOWS_PATH = join(PACKAGE_ROOT, 'src', 'workflows', 'index.ts');

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const full = join(dir, entry);
    if (statSync(full).isDirectory()) out.push(...sourceFiles(full));
    else if (entry.endsWith('.ts') && !entry.endsWith('.test.ts')) out.push(full);
  }
  return out;
}

/** Hash of every source file and the lockfile: a change to either means a new bundle. */
export function bundleHash(): string {
  const hash = createHash('sha256');
  for (const file of sourceFiles(join(PACKAGE_ROOT, 'src'))) {
    hash.update(file.slice(PACKAGE_ROOT.length)).update(readFileSync(file));
  }
  const lock = join(PACKAGE_ROOT, 'package-lock.json');
  if (existsSync(lock)) hash.update(readFileSync(lock));
  return hash.digest('hex').slice(0, 16);
}

/** Path of a bundle of the current workflow code, building it if the cache has none. */
export async function workflowBundlePath({ cacheDir = join(PACKAGE_ROOT, '.keel', 'cache') }: { cacheDir?: string } = {}): Promise<string> {
  const path = join(cacheDir, `workflow-bundle-${bundleHash()}.js`);
  if (existsSync(path)) return path;
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietLogger });
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, code);
  renameSync(temporary, path);
  return path;
}

const noop = (): void => undefined;
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: (message: string) => console.error(message), log: noop };
