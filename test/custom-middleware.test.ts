/**
 * Middleware of your own: a module listed under `middlewareModules` registers it, the
 * worker bundles it with the workflow, and runs use it by name like a built-in. Exercises
 * the contribution plumbing: a workflow-local tool and a system-prompt fragment.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runErrorOf } from '../src/client/keel-client';
import { defineAgent, defineTool } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { loadRegistry } from '../src/worker/load-registry';
import { z } from 'zod';
import { echo } from './fixtures/tools';
import { scheduledActivities } from './support/history';
import { startTestWorker, type TestWorker } from './support/harness';
import { ROOT } from './support/processes';

const middlewareModules = [join(ROOT, 'test', 'fixtures', 'notebook-middleware.ts')];
const registry = new Registry().add(echo);
let worker: TestWorker;
beforeAll(async () => {
  await loadRegistry({ modules: [], models: [], agents: [], baseDir: ROOT, middlewareModules }, registry);
  worker = await startTestWorker(registry, { middlewareModules });
});
afterAll(async () => {
  await worker?.stop();
});

describe('middlewareModules', () => {
  it('adds the middleware tools and system prompt; its tool runs in the workflow, not as an activity', async () => {
    // turn 1: take_note twice and echo; turn 2: done
    const model = scriptedModel({
      name: 'scripted/notebook',
      script: [
        toolCallReply([{ name: 'take_note', input: { text: 'Lisbon is sunny' } }, { name: 'take_note', input: { text: 'Porto rains' } }, { name: 'echo', input: { v: 'x' } }]),
        textReply('done'),
      ],
    });
    registry.add(model, defineAgent({ name: 'notebook', model: model.name, system: 'Plan trips.', tools: [echo], use: [{ name: 'notebook', config: { title: 'trip' } }] }));
    const handle = await worker.client.start('notebook', 'go');
    const result = await handle.result();
    expect(result.text).toBe('done');
    const request = model.requests[0]!.request;
    expect(request.messages[0]).toEqual({ role: 'system', content: [{ text: 'Plan trips.\n\nYou have a notebook called "trip"; write to it with take_note.' }] });
    expect(request.tools.map((tool) => tool.name)).toEqual(['echo', 'take_note']);
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
    expect(error).toMatchObject({ status: 'INVALID_ARGUMENT', message: 'invalid config for middleware "notebook" (use[0]): config.title: Invalid input: expected string, received number' });
  });
});
