/**
 * Where keel finds the `temporal` binary (README, "Two commands", and docs/package.md,
 * "Requirements": `$TEMPORAL_CLI` or `temporal` on PATH, else the project's `.keel/bin`;
 * `server.binary` in temporal.yaml, which TEMPORAL_CLI overrides like every environment
 * override): the order, the error for a TEMPORAL_CLI that
 * does not exist, and `keel server` running the binary TEMPORAL_CLI names.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { loadConfig } from '../src/config/load';
import { findTemporalBinary } from '../src/server/dev-server';
import { freePort } from './support/free-port';
import { ROOT, killAfterEach, runKeel, spawnKeel } from './support/processes';

const track = killAfterEach(afterEach);
const PROJECT_BINARY = join(ROOT, '.keel', 'bin', 'temporal');

/** An executable `<dir>/temporal` that answers `--version` (all findTemporalBinary asks of it). */
function fakeTemporal(dir: string, exitCode = 0): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'temporal');
  writeFileSync(path, `#!/bin/sh\nexit ${exitCode}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** The binary a config in `dir` (with `yaml`, under `env`) resolves to; never installs. */
function resolveIn(dir: string, env: NodeJS.ProcessEnv, yaml: object = {}): string {
  const path = join(dir, 'temporal.yaml');
  writeFileSync(path, stringify(yaml));
  return findTemporalBinary(loadConfig({ path, env }), { install: false });
}

describe('findTemporalBinary', () => {
  let dir: string;
  let pathDir: string;
  const savedPath = process.env.PATH;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'keel-binary-'));
    // A PATH with a shell and a `temporal` of its own, nothing else.
    pathDir = join(dir, 'path');
    fakeTemporal(pathDir);
    symlinkSync('/bin/sh', join(pathDir, 'sh'));
    process.env.PATH = pathDir;
  });
  afterEach(() => {
    process.env.PATH = savedPath;
  });

  it('takes TEMPORAL_CLI over temporal on PATH and the project .keel/bin', () => {
    const cli = fakeTemporal(join(dir, 'cli'));
    expect(resolveIn(dir, { TEMPORAL_CLI: cli })).toBe(cli);
  });

  it('takes TEMPORAL_CLI over server.binary in temporal.yaml, like the other environment overrides', () => {
    const cli = fakeTemporal(join(dir, 'cli'));
    const configured = fakeTemporal(join(dir, 'configured'));
    expect(resolveIn(dir, {}, { server: { binary: configured } })).toBe(configured);
    expect(resolveIn(dir, { TEMPORAL_CLI: cli }, { server: { binary: configured } })).toBe(cli);
  });

  it('takes temporal on PATH over the project .keel/bin, and .keel/bin when PATH has none', () => {
    expect(resolveIn(dir, {})).toBe(join(pathDir, 'temporal'));
    const shellOnly = join(dir, 'shell-only');
    mkdirSync(shellOnly);
    symlinkSync('/bin/sh', join(shellOnly, 'sh'));
    process.env.PATH = shellOnly;
    expect(existsSync(PROJECT_BINARY), 'npm run setup puts the binary in .keel/bin').toBe(true);
    expect(resolveIn(dir, {})).toBe(PROJECT_BINARY);
  });

  it('names the path of a TEMPORAL_CLI that is missing or broken instead of falling back to PATH', () => {
    const missing = join(dir, 'nowhere', 'temporal');
    expect(() => resolveIn(dir, { TEMPORAL_CLI: missing })).toThrow(`${missing} is not a working temporal binary`);
    const broken = fakeTemporal(join(dir, 'broken'), 1);
    expect(() => resolveIn(dir, { TEMPORAL_CLI: broken })).toThrow(`${broken} is not a working temporal binary`);
  });
});

describe('keel server with TEMPORAL_CLI', () => {
  it('runs the dev server from the binary TEMPORAL_CLI names', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-binary-'));
    // A wrapper that records how it was called, then runs the real binary.
    const wrapper = join(dir, 'bin', 'temporal');
    mkdirSync(join(dir, 'bin'));
    writeFileSync(wrapper, `#!/bin/sh\necho "$*" >> "${join(dir, 'calls.log')}"\nexec "${inject('temporalBinary')}" "$@"\n`);
    chmodSync(wrapper, 0o755);
    const [port, uiPort] = [await freePort(), await freePort()];
    const config = join(dir, 'temporal.yaml');
    writeFileSync(config, stringify({ server: { port, uiPort, dbFile: 'server.db' } }));
    const server = track(spawnKeel(['server', '--config', config], { env: { TEMPORAL_CLI: wrapper } }));
    await server.waitFor(/keel: Temporal dev server at 127\.0\.0\.1:\d+/);
    expect(readFileSync(join(dir, 'calls.log'), 'utf8')).toContain(`server start-dev --ip 127.0.0.1 --port ${port}`);
    server.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('exits 1 naming the path when TEMPORAL_CLI does not exist', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-binary-'));
    const missing = join(dir, 'temporal');
    const config = join(dir, 'temporal.yaml');
    writeFileSync(config, stringify({ server: { dbFile: 'server.db' } }));
    const { code, stderr } = await runKeel(['server', '--config', config], { env: { TEMPORAL_CLI: missing } });
    expect(code).toBe(1);
    expect(stderr).toBe(`keel: TEMPORAL_CLI: ${missing} is not a working temporal binary\n`);
  });
});
