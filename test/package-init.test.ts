/**
 * The README's start, from the packed tarball, on a machine without `temporal`: `npm pack`, the
 * tarball installed offline into an empty project with protobufjs laid out as a fresh `npm
 * install` lays it out, `npx keel init` there, and that project's own tests (`npm test`: the
 * testing kit installs the temporal binary into the project's .keel/bin as `keel dev` would,
 * then runs a dev server from it and a scripted model) passing; then `keel dev` and `npx keel
 * run` running its agent at once, `keel history export` of a run, and the replay test of
 * docs/testing.md over the exported file (and over an empty directory, which must fail).
 *
 * The machine: PATH has no `temporal` and TEMPORAL_CLI is unset. The `go` first on PATH
 * stands in for Go's toolchain: `go install` "builds" the CLI by copying the checkout's binary
 * into GOBIN, so keel's own install script runs, offline and in seconds. No network.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../src/node/ports';
import { inProject as runIn, projectLockfile } from './support/packed-project';
import { ROOT, spawnCommand } from './support/processes';

const keelManifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The first directory of this process's PATH that has `name`. */
function onPath(name: string): string {
  const dir = (process.env.PATH ?? '').split(delimiter).find((entry) => entry && existsSync(join(entry, name)));
  if (!dir) throw new Error(`${name} is not on the PATH of the test`);
  return join(dir, name);
}

/** A directory of a PATH holding only links to `names` (found on this process's PATH). */
function pathOf(dir: string, names: string[]): string {
  mkdirSync(dir, { recursive: true });
  for (const name of names) symlinkSync(onPath(name), join(dir, name));
  return dir;
}

describe('npx keel init in an empty project with the tarball installed, on a machine without temporal', () => {
  const project = mkdtempSync(join(tmpdir(), 'keel-init-project-'));
  const packed = mkdtempSync(join(tmpdir(), 'keel-pack-'));
  const machine = mkdtempSync(join(tmpdir(), 'keel-machine-'));
  const goLog = join(machine, 'go.log');
  const installed = join(project, '.keel', 'bin', 'temporal');
  // Go's stand-in, first on PATH; no directory of the PATH has a temporal.
  const toolchain = join(machine, 'toolchain');
  mkdirSync(toolchain);
  writeFileSync(
    join(toolchain, 'go'),
    `#!/bin/sh\necho "$*" >> '${goLog}'\nif [ "$1" = install ]; then cp '${inject('temporalBinary')}' "$GOBIN/temporal"; fi\n`,
  );
  chmodSync(join(toolchain, 'go'), 0o755);
  const PATH = [toolchain, ...(process.env.PATH ?? '').split(delimiter).filter((dir) => dir && !existsSync(join(dir, 'temporal')))].join(delimiter);
  const machineEnv = { PATH, TEMPORAL_CLI: undefined };
  /** A command in the project, on this machine. */
  const inProject = (dir: string, command: string, args: string[], timeout = 240_000, env: Record<string, string | undefined> = {}) =>
    runIn(dir, command, args, timeout, { ...machineEnv, ...env });

  beforeAll(async () => {
    const output = await runIn(ROOT, 'npm', ['pack', '--json', '--pack-destination', packed], 240_000);
    const [packedFile] = JSON.parse(output.slice(output.indexOf('['))) as Array<{ filename: string }>;
    const tarball = join(packed, packedFile!.filename);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'my-shop', version: '1.0.0', private: true, dependencies: { 'keel-agents': `file:${tarball}` } }),
    );
    writeFileSync(join(project, 'package-lock.json'), JSON.stringify(projectLockfile(tarball, 'my-shop', { layout: 'fresh' })));
    await inProject(project, 'npm', ['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error']);
  }, 480_000);

  afterAll(() => {
    for (const dir of [project, packed, machine]) rmSync(dir, { recursive: true, force: true });
  });

  it('has two protobufjs, as a fresh npm install of the tarball has: 7 hoisted, 8 under @temporalio/proto', () => {
    const versionAt = (path: string) => (JSON.parse(readFileSync(join(project, path, 'package.json'), 'utf8')) as { version: string }).version;
    expect(versionAt('node_modules/protobufjs')).toMatch(/^7\./);
    expect(versionAt('node_modules/@temporalio/proto/node_modules/protobufjs')).toMatch(/^8\./);
  });

  it('gives a project whose own tests pass (npm test), installing temporal into its .keel/bin as keel dev would', async () => {
    const init = await inProject(project, 'npx', ['keel', 'init']);
    const { zod } = keelManifest.dependencies;
    const { typescript, '@types/node': nodeTypes } = keelManifest.devDependencies;
    expect(init).toContain(
      `keel init: wrote temporal.yaml, agents.ts, agents.test.ts, tsconfig.json, .gitignore in ${project}; package.json gained the test and typecheck scripts, zod ${zod}, typescript ${typescript}, @types/node ${nodeTypes}`,
    );
    expect(init).toMatch(/^ {2}npm install +# what package.json lists/m);
    // What its files import, at the versions keel is built with: zod is the project's own dependency, not a hoisted accident.
    expect(JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'))).toMatchObject({
      scripts: { test: 'tsx --test agents.test.ts', typecheck: 'tsc' },
      dependencies: { zod },
      devDependencies: { typescript, '@types/node': nodeTypes },
    });
    expect(existsSync(installed)).toBe(false);

    const tested = await inProject(project, 'npm', ['test'], 300_000);
    expect(tested).toMatch(/# pass 2\b/);
    expect(tested).toMatch(/# fail 0\b/);
    expect(existsSync(installed), 'the testing kit installs temporal into the project').toBe(true);
    expect(readFileSync(goLog, 'utf8')).toBe('install github.com/temporalio/cli/cmd/temporal@v1.5.1\n');
    // keel setup, the command the messages name, exists there and finds that binary.
    expect(await inProject(project, 'npx', ['keel', 'setup'])).toBe(`keel setup: temporal at ${installed}\n`);
  }, 420_000);

  it('runs at once under keel dev: a run answers, a refund waits for approval, and its exported history replays', async () => {
    // Free ports instead of the defaults (7233, 8233, 8234), which something else on a CI machine may hold.
    const [port, uiPort, keelUiPort] = [await freePort(), await freePort(), await freePort()];
    writeFileSync(
      join(project, 'temporal.yaml'),
      `${readFileSync(join(project, 'temporal.yaml'), 'utf8')}temporal: { address: 127.0.0.1:${port} }\nserver: { port: ${port}, uiPort: ${uiPort} }\nui: { port: ${keelUiPort} }\n`,
    );
    // The installed bin itself (what npx runs), so that SIGINT reaches keel dev and not an npx in between.
    const dev = spawnCommand(join(project, 'node_modules', '.bin', 'keel'), ['dev'], {
      cwd: project,
      env: { ...machineEnv, npm_config_update_notifier: 'false' },
      label: 'keel dev (initialized project)',
    });
    let runId: string;
    try {
      await dev.waitFor(/keel dev: watching \d+ files/, 180_000);
      const answered = await inProject(project, 'npx', ['keel', 'run', 'support', 'where is order 7?']);
      expect(answered.trim()).toBe('Order 7 has shipped.');

      const started = JSON.parse(await inProject(project, 'npx', ['keel', 'run', 'support', 'refund order 7', '--detach', '--json'])) as { runId: string };
      runId = started.runId;
      let holdId: string | undefined;
      await expect
        .poll(
          async () => {
            const status = JSON.parse(await inProject(project, 'npx', ['keel', 'status', runId])) as {
              interrupts: Array<{ id: string; toolName: string }>;
            };
            holdId = status.interrupts.find((hold) => hold.toolName === 'refund_order')?.id;
            return holdId;
          },
          { timeout: 60_000, interval: 500 },
        )
        .toBeDefined();
      await inProject(project, 'npx', ['keel', 'approve', runId, holdId!]);
      const watched = await inProject(project, 'npx', ['keel', 'watch', runId]);
      expect(watched.trim()).toBe('Order 7 is refunded.');
      // docs/testing.md's command, into a directory that does not exist yet.
      await inProject(project, 'npx', ['keel', 'history', 'export', runId, '--out', 'test/histories/']);
    } finally {
      dev.kill('SIGINT');
      await dev.exited;
    }
    // keel dev ran the binary npm test installed: nothing was built again.
    expect(readFileSync(goLog, 'utf8').trim().split('\n')).toHaveLength(1);
    const exported = JSON.parse(readFileSync(join(project, 'test', 'histories', `${runId}.json`), 'utf8')) as { events: unknown[] };
    expect(exported.events.length).toBeGreaterThan(10);

    // The replay test of docs/testing.md, as written there.
    const block = /```ts\n(\/\/ replay\.test\.ts[^\n]*\n[\s\S]*?)```/.exec(readFileSync(join(ROOT, 'docs', 'testing.md'), 'utf8'));
    if (!block) throw new Error('docs/testing.md has no ```ts block starting with "// replay.test.ts"');
    writeFileSync(join(project, 'replay.test.ts'), block[1]!);
    const replayed = await inProject(project, 'npx', ['tsx', '--test', 'replay.test.ts']);
    expect(replayed).toMatch(/# pass 1\b/);

    // The same test over an empty directory fails: replaying nothing proves nothing.
    renameSync(join(project, 'test', 'histories'), join(project, 'test', 'recorded'));
    mkdirSync(join(project, 'test', 'histories'));
    try {
      const empty = await inProject(project, 'npx', ['tsx', '--test', 'replay.test.ts']).then(
        () => 'passed',
        (error: Error) => error.message,
      );
      expect(empty).toContain('no recorded histories to replay');
      expect(empty).toMatch(/# fail 1\b/);
    } finally {
      rmSync(join(project, 'test', 'histories'), { recursive: true });
      renameSync(join(project, 'test', 'recorded'), join(project, 'test', 'histories'));
    }
  }, 480_000);

  it('typechecks: its tsconfig, agents, tests and the replay test, with the TypeScript and @types/node package.json lists', async () => {
    // The checkout's TypeScript is the version init lists (both read keel's package.json); its @types/node likewise.
    await inProject(project, process.execPath, [
      join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p',
      'tsconfig.json',
      '--typeRoots',
      join(ROOT, 'node_modules', '@types'),
      '--types',
      'node',
    ]);
  }, 120_000);

  it('names only commands the project has when temporal can be neither found nor installed', async () => {
    // Another project on the same machine, without Go or Python to install with.
    const elsewhere = join(project, 'elsewhere');
    mkdirSync(elsewhere);
    const bare = pathOf(join(machine, 'bare'), ['sh', 'bash', 'node', 'dirname', 'mkdir']);
    const keel = join(project, 'node_modules', 'keel-agents', 'bin', 'keel.cjs');
    const setup = await inProject(elsewhere, process.execPath, [keel, 'setup'], 60_000, { PATH: bare }).then(
      () => 'exit 0',
      (error: Error) => error.message,
    );
    expect(setup).toContain(
      `keel: could not install the temporal binary into ${join(elsewhere, '.keel', 'bin')} (the messages above say why): put temporal on the PATH, or set TEMPORAL_CLI (or server.binary in temporal.yaml) to one\n`,
    );
    expect(setup).not.toContain('npm run');
    // Asked not to install, the testing kit's finder names keel setup.
    const script = `const { findTemporalBinary } = require('keel-agents/testing'); const { loadConfig } = require('keel-agents');
      try { findTemporalBinary(loadConfig(), { install: false }); } catch (error) { console.log(error.message); }`;
    expect(await inProject(elsewhere, process.execPath, ['-e', script], 60_000, { PATH: bare })).toBe(
      `no temporal binary found: install one into ${join(elsewhere, '.keel', 'bin')} with npx keel setup, put temporal on the PATH, or set TEMPORAL_CLI (or server.binary in temporal.yaml) to one\n`,
    );
  }, 120_000);
});
