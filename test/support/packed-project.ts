/**
 * What the package tests share: a lockfile for a fresh project whose one dependency is keel's
 * packed tarball (so `npm ci --offline` installs it from the npm cache), and running a command
 * in that project.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { commandEnv, ROOT } from './processes';

const exec = promisify(execFile);

interface Manifest {
  version: string;
  license?: string;
  bin?: Record<string, string>;
  engines?: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

type LockEntry = { version?: string; dev?: boolean; devOptional?: boolean; link?: boolean; dependencies?: Record<string, string> };

/** The major version a dependency range (`^8.7.1`, `7.x`) asks for. */
const majorOf = (range: string) => /\d+/.exec(range)?.[0];

/**
 * `packages` with `name`'s copies laid out as a fresh `npm install` of the tarball lays out
 * protobufjs (npm 11.19, seen in an empty directory): its oldest version hoisted to
 * node_modules/<name>, and a copy of the version each other dependent asks for nested under that
 * dependent. keel's own lockfile hoists the newest instead (protobufjs 8), so a project installed
 * from it alone never meets the split a user's project gets.
 */
function withOldestHoisted(packages: Record<string, LockEntry>, name: string): Record<string, LockEntry> {
  const suffix = `node_modules/${name}`;
  const copies = Object.entries(packages).filter(([path]) => path === suffix || path.endsWith(`/${suffix}`));
  const byMajor = new Map(copies.map(([, entry]) => [majorOf(entry.version!)!, entry]));
  const oldest = [...byMajor.keys()].sort((a, b) => Number(a) - Number(b))[0]!;
  const laidOut = Object.fromEntries(Object.entries(packages).filter(([path]) => !copies.some(([copy]) => copy === path)));
  laidOut[suffix] = byMajor.get(oldest)!;
  for (const [path, entry] of Object.entries(packages)) {
    const wanted = entry.dependencies?.[name];
    if (wanted === undefined || path.endsWith(`/${suffix}`) || majorOf(wanted) === oldest) continue;
    const copy = byMajor.get(majorOf(wanted)!);
    if (!copy) throw new Error(`${path} asks for ${name} ${wanted}, which the lockfile does not have`);
    laidOut[`${path}/${suffix}`] = copy;
  }
  return laidOut;
}

/** Options of `projectLockfile`. */
export interface ProjectLockfileOptions {
  /**
   * `keel`: the dependency tree as keel's own lockfile lays it out. `fresh`: protobufjs as a
   * fresh `npm install` of the tarball lays it out (7 hoisted, 8 under each `@temporalio/*`
   * package that asks for it), the layout a user's project gets.
   */
  layout?: 'keel' | 'fresh';
}

/** A lockfile for project `name` whose one dependency is the tarball: keel's own production tree under it. */
export function projectLockfile(tarball: string, name: string, { layout = 'keel' }: ProjectLockfileOptions = {}): object {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  const { license, dependencies, peerDependencies, peerDependenciesMeta, bin, engines } = manifest;
  const production: Record<string, LockEntry> = {};
  for (const [path, entry] of Object.entries(lock.packages)) if (path && !entry.dev && !entry.devOptional && !entry.link) production[path] = entry;
  const packages: Record<string, unknown> = {
    '': { name, version: '1.0.0', dependencies: { 'keel-agents': `file:${tarball}` } },
    'node_modules/keel-agents': {
      version: manifest.version,
      resolved: `file:${tarball}`,
      integrity,
      license,
      dependencies,
      peerDependencies,
      peerDependenciesMeta,
      bin,
      engines,
    },
    ...(layout === 'fresh' ? withOldestHoisted(production, 'protobufjs') : production),
  };
  return { name, version: '1.0.0', lockfileVersion: 3, requires: true, packages };
}

/** Runs a command in `dir`; resolves to its stdout, rejects with its output. */
export async function inProject(
  dir: string,
  command: string,
  args: string[],
  timeout = 120_000,
  env: Record<string, string | undefined> = {},
): Promise<string> {
  try {
    const { stdout } = await exec(command, args, {
      cwd: dir,
      timeout,
      maxBuffer: 16 * 1024 * 1024,
      env: commandEnv({ npm_config_update_notifier: 'false', ...env }),
    });
    return stdout;
  } catch (error) {
    const failed = error as Error & { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${dir}: ${failed.message}\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`);
  }
}
