/**
 * An interrupting steer that comes while a hold raised inside the model-call stage waits (a
 * middleware asks before each model call, from `wrapModel`): the hold is not cancelled and keeps
 * its id; the message is taken by the model call made once the hold is decided.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hold } from '../src/core/run';
import type { Message } from '../src/core/messages';
import { defineAgent } from '../src/define';
import { scriptedModel, textReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { loadRegistry } from '../src/worker/load-registry';
import { modelGate } from './fixtures/model-gate-middleware';
import { startTestWorker, type TestWorker } from './support/harness';
import { ROOT } from './support/processes';

const middlewareModules = [join(ROOT, 'test', 'fixtures', 'model-gate-middleware.ts')];
const model = scriptedModel({ name: 'scripted/steering-gated', script: [textReply('gated answer')] });
const registry = new Registry().add(model, defineAgent({ name: 'steering-gated', model: model.name, use: [modelGate({})] }));
let worker: TestWorker;
beforeAll(async () => {
  await loadRegistry({ modules: [], models: [], agents: [], baseDir: ROOT, middlewareModules }, registry);
  worker = await startTestWorker(registry, { middlewareModules });
}, 120_000);
afterAll(async () => {
  await worker?.stop();
});

const userTexts = (messages: readonly Message[]) =>
  messages.filter((message) => message.role === 'user').flatMap((message) => message.content.flatMap((part) => ('text' in part ? [part.text] : [])));

describe('an interrupting steer during a hold in the model-call stage', () => {
  it('leaves the hold pending with its id, and the call made after the decision takes the message', async () => {
    const handle = await worker.client.start('steering-gated', 'start');
    let pending: Hold[] = [];
    await expect.poll(async () => (pending = await handle.pendingHolds()).length, { timeout: 20_000, interval: 50 }).toBe(1);
    const held = pending[0]!;
    expect(held).toMatchObject({ kind: 'model-gate', toolName: '(next model call)' });
    const record = await handle.steer('answer in French', { interrupt: true });
    expect(record).toMatchObject({ state: 'pending', interrupt: true });
    expect(record.cancelledModelCall).toBeUndefined();
    // Give a cancellation time to act, if one were made: the same hold still waits.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await handle.pendingHolds()).map((interrupt) => interrupt.id)).toEqual([held.id]);
    await handle.decide({ interruptId: held.id, restart: { go: true } });
    const result = await handle.result();
    expect(result.text).toBe('gated answer');
    const requests = model.requests.filter((request) => request.runId === handle.runId);
    expect(requests).toHaveLength(1);
    expect(userTexts(requests[0]!.request.messages)).toEqual(['start', 'answer in French']);
    expect(result.turns).toBe(1);
    expect((await handle.status()).steering).toEqual([expect.objectContaining({ state: 'applied', turn: 1 })]);
  });
});
