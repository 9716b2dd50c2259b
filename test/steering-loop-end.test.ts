/**
 * A steer that comes when the run has finished its tool loop but has not yet ended (a
 * middleware keeps it open after the loop) is refused with why: no model call would take it.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runErrorOf } from '../src/client/keel-client';
import { defineAgent } from '../src/define';
import { scriptedModel, textReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { loadRegistry } from '../src/worker/load-registry';
import { lingering } from './fixtures/lingering-middleware';
import { startTestWorker, type TestWorker } from './support/harness';
import { ROOT } from './support/processes';

const middlewareModules = [join(ROOT, 'test', 'fixtures', 'lingering-middleware.ts')];
const model = scriptedModel({ name: 'scripted/steering-lingerer', script: [textReply('done')] });
const registry = new Registry().add(model, defineAgent({ name: 'steering-lingerer', model: model.name, use: [lingering({ ms: 3000 })] }));
let worker: TestWorker;
beforeAll(async () => {
  await loadRegistry({ modules: [], models: [], agents: [], baseDir: ROOT, middlewareModules }, registry);
  worker = await startTestWorker(registry, { middlewareModules });
}, 120_000);
afterAll(async () => {
  await worker?.stop();
});

describe('update steer after the loop', () => {
  it('refuses a run that has finished its loop but not yet ended, saying so', async () => {
    const handle = await worker.client.start('steering-lingerer', 'start');
    await expect.poll(async () => (await handle.messages()).length, { timeout: 20_000, interval: 50 }).toBe(2);
    expect((await handle.status()).state).toBe('running');
    const refused = await handle.steer('too late').catch((error: unknown) => runErrorOf(error));
    expect(refused).toMatchObject({ status: 'FAILED_PRECONDITION', message: `run "${handle.runId}" has finished its loop; it takes no more steering` });
    expect((await handle.result()).text).toBe('done');
    expect((await handle.status()).steering).toBeUndefined();
  });
});
