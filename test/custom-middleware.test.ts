/**
 * Middleware of your own: a module listed under `middlewareModules` registers it, the
 * worker bundles it with the workflow, and runs use it by name like a built-in. Exercises
 * the contribution plumbing: a workflow-local tool and a system-prompt fragment.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, type ExpectStatic } from 'vitest';
import { runErrorOf, type RunHandle } from '../src/client/keel-client';
import type { Hold } from '../src/core/run';
import { spendingGate } from '../examples/spending-gate';
import { notebook } from './fixtures/notebook-middleware';
import { defineAgent, defineTool } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { loadRegistry } from '../src/worker/load-registry';
import { z } from 'zod';
import { echo } from './fixtures/tools';
import { scheduledActivities } from './support/history';
import { signalWithCli } from './support/temporal-cli';
import { startTestWorker, type TestWorker } from './support/harness';
import { ROOT } from './support/processes';

const middlewareModules = [join(ROOT, 'test', 'fixtures', 'notebook-middleware.ts'), join(ROOT, 'examples', 'spending-gate.ts')];
const pay = defineTool({ name: 'pay', description: 'Pays an amount.', input: z.object({ amount: z.number() }), run: ({ amount }) => ({ paid: amount }) });
const registry = new Registry().add(echo, pay);
let worker: TestWorker;
beforeAll(async () => {
  await loadRegistry({ modules: [], models: [], agents: [], baseDir: ROOT, middlewareModules }, registry);
  worker = await startTestWorker(registry, { middlewareModules });
});
afterAll(async () => {
  await worker?.stop();
});

/** The one hold the run waits on (`expect` is the test's own: the tests run side by side). */
async function pendingHold(handle: RunHandle, expect: ExpectStatic): Promise<Hold> {
  let pending: Hold[] = [];
  await expect.poll(async () => (pending = await handle.pendingHolds()).length, { timeout: 20_000, interval: 50 }).toBe(1);
  return pending[0]!;
}

// One of these registers a tool named take_note, which the notebook middleware also contributes: these run one after
// another, before the rest.
describe('middlewareModules', () => {
  it('adds the middleware tools and system prompt; its tool runs in the workflow, not as an activity', async () => {
    // turn 1: take_note twice and echo; turn 2: done
    const model = scriptedModel({
      name: 'scripted/notebook',
      script: [
        toolCallReply([
          { name: 'take_note', input: { text: 'Lisbon is sunny' } },
          { name: 'take_note', input: { text: 'Porto rains' } },
          { name: 'echo', input: { v: 'x' } },
        ]),
        textReply('done'),
      ],
    });
    registry.add(
      model,
      defineAgent({ name: 'notebook', model: model.name, system: 'Plan trips.', tools: [echo], use: [{ name: 'notebook', config: { title: 'trip' } }] }),
    );
    const handle = await worker.client.start('notebook', 'go');
    const result = await handle.result();
    expect(result.text).toBe('done');
    const request = model.requests[0]!.request;
    expect(request.messages[0]).toEqual({
      role: 'system',
      content: [{ text: 'Plan trips.\n\nYou have a notebook called "trip"; write to it with take_note.' }],
    });
    expect(request.tools.map((tool) => tool.name)).toEqual(['echo', 'take_note', 'erase_notes']);
    expect(result.messages.at(-2)!.content.map((part) => ('toolResponse' in part ? part.toolResponse.output : undefined))).toEqual([
      { title: 'trip', notes: ['Lisbon is sunny'] },
      { title: 'trip', notes: ['Lisbon is sunny', 'Porto rains'] },
      { v: 'x' },
    ]);
    expect(await scheduledActivities(worker.client.temporal, handle.runId)).toEqual(['callModel', 'callTool', 'callModel']);
  });

  it('rejects a contributed tool whose name the agent already declares', async () => {
    const takeNote = defineTool({ name: 'take_note', description: 'clash', input: z.object({}), run: () => ({}) });
    const model = scriptedModel({ name: 'scripted/notebook-clash', script: [textReply('never')] });
    registry.add(takeNote, model, defineAgent({ name: 'notebook-clash', model: model.name, tools: [takeNote], use: [{ name: 'notebook' }] }));
    const error = await worker.client.run('notebook-clash', 'go').then(() => undefined, runErrorOf);
    expect(error).toMatchObject({ status: 'INVALID_ARGUMENT', message: 'tool "take_note" is contributed by middleware but already declared elsewhere' });
    expect(model.requests).toHaveLength(0);
  });

  it('validates the config of a custom middleware like a built-in', async () => {
    const model = scriptedModel({ name: 'scripted/notebook-bad', script: [textReply('never')] });
    registry.add(model, defineAgent({ name: 'notebook-bad', model: model.name, use: [{ name: 'notebook', config: { title: 7 } }] }));
    const error = await worker.client.run('notebook-bad', 'go').then(() => undefined, runErrorOf);
    expect(error).toMatchObject({
      status: 'INVALID_ARGUMENT',
      message: 'invalid config for middleware "notebook" (use[0]): config.title: Invalid input: expected string, received number',
    });
  });
});

describe.concurrent('a contributed tool that asks its own question', () => {
  it('holds the call; a restart hands it the answer, and a respond stands in for it', async ({ expect }) => {
    // run 1, turn 1: take_note, then erase_notes asks (held); restarted with { yes: true }, it erases; turn 2: done
    // run 2, turn 1: erase_notes asks (held); answered with a stand-in output; turn 2: done
    const model = scriptedModel({
      name: 'scripted/notebook-erase',
      script: (request) =>
        request.messages.at(-1)?.role === 'tool'
          ? textReply('done')
          : toolCallReply([
              { name: 'take_note', input: { text: 'a' } },
              { name: 'erase_notes', input: {} },
            ]),
    });
    registry.add(model, defineAgent({ name: 'notebook-erase', model: model.name, use: [notebook({ title: 'trip' })] }));
    const handle = await worker.client.start('notebook-erase', 'go');
    const held = await pendingHold(handle, expect);
    expect(held).toMatchObject({ kind: 'tool', toolName: 'erase_notes', raisedBy: 'tool', data: { question: 'Erase "trip"?' } });
    await handle.restart(held.id, { yes: true });
    expect((await handle.result()).messages.at(-2)!.content[1]).toEqual({ toolResponse: { name: 'erase_notes', ref: '1', output: { erased: 1 } } });

    const second = await worker.client.start('notebook-erase', 'go');
    await second.respond((await pendingHold(second, expect)).id, { erased: 0 });
    expect((await second.result()).messages.at(-2)!.content[1]).toEqual({ toolResponse: { name: 'erase_notes', ref: '1', output: { erased: 0 } } });
  });
});

describe.concurrent('a middleware that holds calls (examples/spending-gate.ts, as docs/middleware/custom.md builds it)', () => {
  /** An agent paying 50 and 500 in one turn, then saying done, behind spendingGate({ limit: 100 }). */
  function payingAgent(name: string) {
    const model = scriptedModel({
      name: `scripted/${name}`,
      script: [
        toolCallReply([
          { name: 'pay', input: { amount: 50 } },
          { name: 'pay', input: { amount: 500 } },
        ]),
        textReply('done'),
      ],
    });
    registry.add(model, defineAgent({ name, model: model.name, tools: [pay], use: [spendingGate({ limit: 100 })] }));
    return model;
  }

  it('holds only the call over the limit, shows its data, and runs it once the decision raises the limit', async ({ expect }) => {
    // turn 1: pay 50 runs, pay 500 is held; restarted with { limit: 1000 }, it runs; turn 2: done
    const model = payingAgent('spending-raise');
    const handle = await worker.client.start('spending-raise', 'pay the bills');
    const held = await pendingHold(handle, expect);
    // The hold says what it asks and what it takes, as the middleware declared it: a client renders it from this alone.
    expect(held).toMatchObject({
      kind: 'spending',
      toolName: 'pay',
      input: { amount: 500 },
      raisedBy: 'spendingGate',
      question: 'Let pay spend 500? (the limit is 100)',
      data: { tool: 'pay', amount: 500, limit: 100 },
      respond: 'answer',
    });
    expect(held.decision).toMatchObject({
      anyOf: [{ properties: { approved: { type: 'boolean' } } }, { required: ['limit'], properties: { limit: { type: 'number' } } }],
    });
    // A decision its schema does not take is refused before it is accepted, naming the field; the hold still waits.
    await expect(handle.decide({ interruptId: held.id, restart: { limit: 'lots' } })).rejects.toThrow(
      /the decision for hold i1 \(a spending hold on tool "pay"\) is not one it takes: .*limit/,
    );
    expect((await handle.status()).interrupts.map((interrupt) => interrupt.id)).toEqual([held.id]);
    await handle.decide({ interruptId: held.id, restart: { limit: 1000 }, decidedBy: 'finance@example.com' });
    const result = await handle.result();
    expect(result.text).toBe('done');
    // Who decided, how and what, in the result and the status alike.
    const record = {
      interruptId: held.id,
      kind: 'spending',
      toolName: 'pay',
      decision: 'restart',
      decidedBy: 'finance@example.com',
      route: 'update',
      payload: { limit: 1000 },
    };
    expect(result.decisions).toEqual([expect.objectContaining(record)]);
    expect((await handle.status()).decisions).toEqual([expect.objectContaining(record)]);
    expect(Date.parse(result.decisions[0]!.at)).toBeGreaterThan(0);
    expect(model.requests[1]!.request.messages.at(-1)!.content).toEqual([
      { toolResponse: { name: 'pay', ref: '0', output: { paid: 50 } } },
      { toolResponse: { name: 'pay', ref: '1', output: { paid: 500 } } },
    ]);
  });

  it('refuses a forged signal its hold does not take, and records a forged "forwarded" claim as a plain signal', async ({ expect }) => {
    const model = payingAgent('spending-forged');
    const handle = await worker.client.start('spending-forged', 'pay the bills');
    const held = await pendingHold(handle, expect);
    // Sent with the temporal CLI, as anyone with access to the namespace could: the kind's schema still decides.
    await signalWithCli(handle.runId, 'resume', JSON.stringify({ interruptId: held.id, restart: { limit: 'lots' } }));
    await expect.poll(async () => (await handle.status()).refusedSignals?.length ?? 0, { timeout: 10_000 }).toBe(1);
    const status = await handle.status();
    expect(status.refusedSignals![0]!.reason).toMatch(/is not one it takes: .*limit/);
    expect(status.interrupts.map((interrupt) => interrupt.id)).toEqual([held.id]);
    // A signal claiming to come from a run above, which this run does not answer to, is not recorded as forwarded.
    await signalWithCli(
      handle.runId,
      'resume',
      JSON.stringify({ interruptId: held.id, restart: { limit: 1000 }, forwardedFrom: 'not-my-parent', decidedBy: 'mallory' }),
    );
    const result = await handle.result();
    expect(result.text).toBe('done');
    expect(result.decisions).toEqual([expect.objectContaining({ interruptId: held.id, route: 'signal', decidedBy: 'mallory' })]);
    expect(result.decisions[0]).not.toHaveProperty('forwardedFrom');
    expect(model.requests).toHaveLength(2);
  });

  it('answers the model with the refusal and its reason when the decision denies', async ({ expect }) => {
    const model = payingAgent('spending-deny');
    const handle = await worker.client.start('spending-deny', 'pay the bills');
    await handle.deny((await pendingHold(handle, expect)).id, { reason: 'too much this month' });
    expect((await handle.result()).text).toBe('done');
    expect(model.requests[1]!.request.messages.at(-1)!.content[1]).toEqual({
      toolResponse: { name: 'pay', ref: '1', output: { error: 'spending 500 was not approved: too much this month' } },
      metadata: { toolError: true },
    });
    expect(await scheduledActivities(worker.client.temporal, handle.runId)).toEqual(['callModel', 'callTool', 'callModel']);
  });
});
