/**
 * The Temporal server (SQLite file) stops in the middle of a run and starts again: the run
 * completes. Uses a server of its own, so the shared one is never disturbed.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, defineTool } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { startDevServer, type DevServer } from '../src/server/dev-server';
import { freePort } from './support/free-port';
import { startTestWorker } from './support/harness';

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
