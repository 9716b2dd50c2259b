/**
 * The README's start, from the packed tarball: `npm pack`, the tarball installed offline into
 * an empty project (as test/package.test.ts installs it), `npx keel init` there, and that
 * project's own tests (`npm test`: the testing kit, a dev server from the checkout's temporal
 * binary, a scripted model) passing. No network.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ROOT } from './support/processes';

const exec = promisify(execFile);
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown> & { version: string };

/** A lockfile whose one dependency is the tarball: keel's own production tree under it. */
function projectLockfile(tarball: string): object {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; devOptional?: boolean; link?: boolean }>;
  };
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  const { license, dependencies, peerDependencies, peerDependenciesMeta, bin, engines } = manifest;
  const packages: Record<string, unknown> = {
    '': { name: 'my-shop', version: '1.0.0', dependencies: { 'keel-agents': `file:${tarball}` } },
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
  return { name: 'my-shop', version: '1.0.0', lockfileVersion: 3, requires: true, packages };
}

async function inProject(dir: string, command: string, args: string[], timeout = 240_000): Promise<string> {
  try {
    const { stdout } = await exec(command, args, {
      cwd: dir,
      timeout,
      maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, npm_config_update_notifier: 'false', TEMPORAL_CLI: inject('temporalBinary') },
    });
    return stdout;
  } catch (error) {
    const failed = error as Error & { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${dir}: ${failed.message}\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`);
  }
}

describe('npx keel init in an empty project with the tarball installed', () => {
  const project = mkdtempSync(join(tmpdir(), 'keel-init-project-'));
  const packed = mkdtempSync(join(tmpdir(), 'keel-pack-'));

  beforeAll(async () => {
    const output = await inProject(ROOT, 'npm', ['pack', '--json', '--pack-destination', packed]);
    const [packedFile] = JSON.parse(output.slice(output.indexOf('['))) as Array<{ filename: string }>;
    const tarball = join(packed, packedFile!.filename);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'my-shop', version: '1.0.0', private: true, dependencies: { 'keel-agents': `file:${tarball}` } }),
    );
    writeFileSync(join(project, 'package-lock.json'), JSON.stringify(projectLockfile(tarball)));
    await inProject(project, 'npm', ['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error']);
  }, 480_000);

  afterAll(() => {
    for (const dir of [project, packed]) rmSync(dir, { recursive: true, force: true });
  });

  it('gives a project whose own tests pass (npm test)', async () => {
    const init = await inProject(project, 'npx', ['keel', 'init']);
    expect(init).toContain('keel init: wrote temporal.yaml, agents.ts, agents.test.ts');
    const tested = await inProject(project, 'npm', ['test'], 300_000);
    expect(tested).toMatch(/# pass 2\b/);
    expect(tested).toMatch(/# fail 0\b/);
  }, 360_000);
});
