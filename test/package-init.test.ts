/**
 * The README's start, from the packed tarball: `npm pack`, the tarball installed offline into
 * an empty project (as test/package.test.ts installs it), `npx keel init` there, and that
 * project's own tests (`npm test`: the testing kit, a dev server from the checkout's temporal
 * binary, a scripted model) passing, then `keel dev` and `npx keel run` running its agent at
 * once. No network.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../src/server/ports';
import { inProject as runIn, projectLockfile } from './support/packed-project';
import { ROOT, spawnCommand } from './support/processes';

/** A command in the project, with the checkout's temporal binary for the dev servers it starts. */
const inProject = (dir: string, command: string, args: string[], timeout = 240_000) =>
  runIn(dir, command, args, timeout, { TEMPORAL_CLI: inject('temporalBinary') });

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
    writeFileSync(join(project, 'package-lock.json'), JSON.stringify(projectLockfile(tarball, 'my-shop')));
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

  it('runs at once under keel dev: npx keel run answers, and a refund waits for npx keel approve', async () => {
    // Free ports instead of the defaults (7233, 8233, 8234), which something else on a CI machine may hold.
    const [port, uiPort, keelUiPort] = [await freePort(), await freePort(), await freePort()];
    appendFileSync(
      join(project, 'temporal.yaml'),
      `temporal: { address: 127.0.0.1:${port} }\nserver: { port: ${port}, uiPort: ${uiPort} }\nui: { port: ${keelUiPort} }\n`,
    );
    // The installed bin itself (what npx runs), so that SIGINT reaches keel dev and not an npx in between.
    const dev = spawnCommand(join(project, 'node_modules', '.bin', 'keel'), ['dev'], {
      cwd: project,
      env: { TEMPORAL_CLI: inject('temporalBinary'), npm_config_update_notifier: 'false' },
      label: 'keel dev (initialized project)',
    });
    try {
      await dev.waitFor(/keel dev: watching \d+ files/, 180_000);
      const answered = await inProject(project, 'npx', ['keel', 'run', 'support', 'where is order 7?']);
      expect(answered.trim()).toBe('Order 7 has shipped.');

      const started = JSON.parse(await inProject(project, 'npx', ['keel', 'run', 'support', 'refund order 7', '--detach', '--json'])) as { runId: string };
      let holdId: string | undefined;
      await expect
        .poll(
          async () => {
            const status = JSON.parse(await inProject(project, 'npx', ['keel', 'status', started.runId])) as {
              interrupts: Array<{ id: string; toolName: string }>;
            };
            holdId = status.interrupts.find((hold) => hold.toolName === 'refund_order')?.id;
            return holdId;
          },
          { timeout: 60_000, interval: 500 },
        )
        .toBeDefined();
      await inProject(project, 'npx', ['keel', 'approve', started.runId, holdId!]);
      const watched = await inProject(project, 'npx', ['keel', 'watch', started.runId]);
      expect(watched.trim()).toBe('Order 7 is refunded.');
    } finally {
      dev.kill('SIGINT');
      await dev.exited;
    }
  }, 420_000);
});
