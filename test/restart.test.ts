/**
 * The Temporal server (SQLite file) stops in the middle of a run and starts again: the run
 * completes; a worker started while the server is down waits for it. Uses servers of its
 * own, so the shared one is never disturbed.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { KeelClient } from '../src/client/keel-client';
import { defineConfig } from '../src/config/load';
import { z } from 'zod';
import { defineAgent, defineTool } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { startDevServer, type DevServer } from '../src/server/dev-server';
import { freePort } from './support/free-port';
import { startTestWorker } from './support/harness';
import { killAfterEach, spawnKeel, writeTestConfig } from './support/processes';

let server: DevServer | undefined;
afterAll(async () => {
  await server?.stop();
});

describe('server restart', () => {
  it('completes a run whose server was stopped and started again mid-run', async () => {
    // turn 1: a 3 s tool, during which the server stops and restarts; turn 2: one more tool; turn 3: text
    const dir = mkdtempSync(join(tmpdir(), 'keel-restart-'));
    const port = await freePort();
    const options = { binary: inject('temporalBinary'), port, headless: true, dbFile: join(dir, 'temporal.db'), logLevel: 'error' };
    server = await startDevServer(options);

    const runs: number[] = [];
    let resolveStarted!: () => void;
    const started = new Promise<void>((resolve) => (resolveStarted = resolve));
    const pause = defineTool({
      name: 'pause',
      description: 'Sleeps.',
      input: z.object({ ms: z.number() }),
      async run({ ms }) {
        runs.push(ms);
        resolveStarted();
        await new Promise((resolve) => setTimeout(resolve, ms));
        return { slept: ms };
      },
    });
    const model = scriptedModel({
      name: 'scripted/restart',
      script: [toolCallReply({ name: 'pause', input: { ms: 3000 } }), toolCallReply({ name: 'pause', input: { ms: 10 } }), textReply('survived')],
    });
    const registry = new Registry().add(pause, model, defineAgent({ name: 'restart', model: model.name, tools: [pause] }));
    const worker = await startTestWorker(registry, {
      temporal: { address: server.address },
      activities: { tool: { heartbeatTimeout: '5 seconds', retry: { initialInterval: '500ms' } } },
    });
    try {
      const handle = await worker.client.start('restart', 'hi');
      await started;
      await server.stop();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      server = await startDevServer(options);
      const result = await handle.result();
      expect(result.text).toBe('survived');
      expect(result.turns).toBe(3);
      expect(result.messages.filter((message) => message.role === 'tool').map((message) => message.content)).toEqual([
        [{ toolResponse: { name: 'pause', ref: '0', output: { slept: 3000 } } }],
        [{ toolResponse: { name: 'pause', ref: '0', output: { slept: 10 } } }],
      ]);
      // The long call runs again only if its completion was lost while the server was down;
      // the call made after the restart, and each model call, ran once.
      expect(runs.filter((ms) => ms === 3000).length).toBeLessThanOrEqual(2);
      expect(runs.filter((ms) => ms === 10)).toHaveLength(1);
      expect(model.requests.map((request) => request.callIndex)).toEqual([0, 1, 2]);
    } finally {
      await worker.stop();
    }
  });
});

describe('a worker started while the server is down', () => {
  const track = killAfterEach(afterEach);

  it('keeps trying with backoff, says so, and serves runs once the server is up', async () => {
    const port = await freePort();
    const { configPath, taskQueue } = writeTestConfig('late-server', {
      temporal: { address: `127.0.0.1:${port}` },
      externalStorage: { driver: 'none' },
      agents: [{ name: 'late', description: 'Answers.', model: 'scripted/late' }],
      models: [{ name: 'scripted/late', script: [{ text: 'served' }] }],
    });
    const worker = track(spawnKeel(['worker', '--config', configPath]));
    await worker.waitFor(/cannot reach Temporal at 127\.0\.0\.1:\d+ \(attempt 2: .*\); retrying in 1\.0 s/, 30_000);
    const dir = mkdtempSync(join(tmpdir(), 'keel-late-'));
    const late = await startDevServer({ binary: inject('temporalBinary'), port, headless: true, dbFile: join(dir, 'temporal.db'), logLevel: 'error' });
    try {
      await worker.waitFor(/reached Temporal at 127\.0\.0\.1:\d+ \(attempt \d+\)/, 30_000);
      const client = await KeelClient.connect(defineConfig({ temporal: { address: late.address }, taskQueue, externalStorage: { driver: 'none' } }));
      try {
        expect((await client.run('late', 'hi')).text).toBe('served');
      } finally {
        await client.temporal.connection.close();
      }
      worker.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    } finally {
      await late.stop();
    }
  });

  it('keeps a watching keel run (and --json, and RunHandle.result()) waiting through a server restart; the exit code is the run outcome', async () => {
    // each run: a 4 s tool, during which the server stops and starts again; then text
    await server?.stop();
    const dir = mkdtempSync(join(tmpdir(), 'keel-restart-watch-'));
    const port = await freePort();
    const options = { binary: inject('temporalBinary'), port, headless: true, dbFile: join(dir, 'temporal.db'), logLevel: 'error' };
    server = await startDevServer(options);
    let started = 0;
    const pause = defineTool({
      name: 'pause',
      description: 'Sleeps.',
      input: z.object({ ms: z.number() }),
      async run({ ms }) {
        started += 1;
        await new Promise((resolve) => setTimeout(resolve, ms));
        return { slept: ms };
      },
    });
    const model = scriptedModel({
      name: 'scripted/restart-watch',
      script: (request) => (request.messages.at(-1)?.role === 'tool' ? textReply('survived') : toolCallReply({ name: 'pause', input: { ms: 4000 } })),
    });
    const registry = new Registry().add(pause, model, defineAgent({ name: 'restart-watch', model: model.name, tools: [pause] }));
    const worker = await startTestWorker(registry, {
      temporal: { address: server.address },
      activities: { tool: { heartbeatTimeout: '5 seconds', retry: { initialInterval: '500ms' } } },
    });
    try {
      const { configPath } = writeTestConfig('restart-watch', {
        temporal: { address: server.address },
        taskQueue: worker.taskQueue,
        server: { enabled: false },
      });
      const watching = track(spawnKeel(['run', 'restart-watch', 'hi', '--config', configPath]));
      const json = track(spawnKeel(['run', 'restart-watch', 'hi', '--json', '--config', configPath]));
      const handle = await worker.client.start('restart-watch', 'hi');
      const waiting = handle.result({ reconnectForMs: 60_000 });
      await Promise.all([watching.waitFor(/run \S+ started/), json.waitFor(/run \S+ started/)]);
      await expect.poll(() => started, { timeout: 20_000, interval: 50 }).toBe(3);
      await server.stop();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      server = await startDevServer(options);
      expect((await waiting).text).toBe('survived');
      expect(await watching.exited, watching.output()).toBe(0);
      expect(watching.stdout().trim()).toBe('survived');
      expect(await json.exited, json.output()).toBe(0);
      expect(JSON.parse(json.stdout())).toMatchObject({ status: 'completed', text: 'survived' });
    } finally {
      await worker.stop();
    }
  }, 120_000);
});
