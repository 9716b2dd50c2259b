/**
 * Builds the page of `keel ui` (ui/, Preact with Vite) into dist/web, which the UI server serves.
 * `npm run build:ui`; `npm run setup` in a checkout runs it, `npm pack` too (build), and the
 * tests' global setup when ui/ changed since the last build. Not a `prepare` script: that would
 * ship in the packed manifest and run again on every pack.
 */
import { existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..');
export const UI_SOURCE = join(ROOT, 'ui');
export const UI_OUTPUT = join(ROOT, 'dist', 'web');

/** The newest modification time of the files under `dir`. */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/** True when dist/web is missing or older than ui/. */
export function uiIsStale(): boolean {
  const index = join(UI_OUTPUT, 'index.html');
  return !existsSync(index) || statSync(index).mtimeMs < newest(UI_SOURCE);
}

/**
 * Puts the directory `next` where `target` is. The old one is moved aside first and removed
 * after, so a reader (a running `keel ui`, a test) finds a whole tree at `target` at every moment
 * but the instant between two renames, never a half-emptied or half-written one.
 */
export function replaceDirectory(target: string, next: string): void {
  const old = `${target}.old-${process.pid}`;
  rmSync(old, { recursive: true, force: true });
  if (existsSync(target)) renameSync(target, old);
  renameSync(next, target);
  rmSync(old, { recursive: true, force: true });
}

/**
 * Builds the page (with `ifStale`, only when ui/ changed since the last build) into `outDir`
 * (default dist/web). The build goes to a sibling directory first, then replaces the old page.
 */
export async function buildUi({ ifStale = false, outDir = UI_OUTPUT } = {}): Promise<boolean> {
  if (ifStale && !uiIsStale()) return false;
  // Vite ships ES modules only: loaded by name, typed by what is used of it.
  const vite = 'vite';
  type BuildOptions = { configFile: string; logLevel: 'warn'; build: { outDir: string; emptyOutDir: boolean } };
  const { build } = (await import(vite)) as { build: (options: BuildOptions) => Promise<unknown> };
  const next = `${outDir}.next-${process.pid}`;
  rmSync(next, { recursive: true, force: true });
  await build({ configFile: join(UI_SOURCE, 'vite.config.mts'), logLevel: 'warn', build: { outDir: next, emptyOutDir: true } });
  replaceDirectory(outDir, next);
  return true;
}

if (require.main === module) {
  buildUi().then(
    () => process.stdout.write(`keel: built the UI in ${UI_OUTPUT}\n`),
    (error: unknown) => {
      process.stderr.write(`keel: building the UI failed: ${(error as Error).message}\n`);
      process.exit(1);
    },
  );
}
