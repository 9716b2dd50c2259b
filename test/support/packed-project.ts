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
import { ROOT } from './processes';

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

/** A lockfile for project `name` whose one dependency is the tarball: keel's own production tree under it. */
export function projectLockfile(tarball: string, name: string): object {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; devOptional?: boolean; link?: boolean }>;
  };
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  const { license, dependencies, peerDependencies, peerDependenciesMeta, bin, engines } = manifest;
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
  };
  for (const [path, entry] of Object.entries(lock.packages)) if (path && !entry.dev && !entry.devOptional && !entry.link) packages[path] = entry;
  return { name, version: '1.0.0', lockfileVersion: 3, requires: true, packages };
}

/** Runs a command in `dir`; resolves to its stdout, rejects with its output. */
export async function inProject(dir: string, command: string, args: string[], timeout = 120_000, env: Record<string, string> = {}): Promise<string> {
  try {
    const { stdout } = await exec(command, args, {
      cwd: dir,
      timeout,
      maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, npm_config_update_notifier: 'false', ...env },
    });
    return stdout;
  } catch (error) {
    const failed = error as Error & { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${dir}: ${failed.message}\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`);
  }
}
