/**
 * `temporal workflow reset` to before a decision: the server re-applies the `resume` update
 * (and signal) to the new run at its first workflow task, before the run has raised that hold
 * again. keel keeps such a decision until the hold with its id comes back, applies it then,
 * and says so in `status`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunHandle } from '../src/client/keel-client';
import { defineAgent } from '../src/define';
import { toolApproval } from '../src/features/tool-approval/tool-approval';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { dangerous, echo } from './fixtures/tools';
import { startTestWorker, type TestWorker } from './support/harness';
import { resetToFirstTask } from './support/history';

const registry = new Registry().add(dangerous, echo);
let worker: TestWorker;
beforeAll(async () => {
  worker = await startTestWorker(registry);
});
afterAll(async () => {
  await worker?.stop();
});

let agents = 0;
/** An agent whose model asks for `dangerous` (held for approval) until it has an answer, then says done. */
function approvalAgent(): string {
  const name = `reset-${++agents}`;
  const model = scriptedModel({
    name: `scripted/${name}`,
    script: (request) => (request.messages.at(-1)?.role === 'tool' ? textReply('done') : toolCallReply({ name: 'dangerous', input: { v: 'x' } })),
  });
  registry.add(model, defineAgent({ name, model: model.name, tools: [dangerous], use: [toolApproval()] }));
  return name;
}

async function waitForHold(handle: RunHandle): Promise<string> {
  let id: string | undefined;
  await expect.poll(async () => (id = (await handle.pendingHolds())[0]?.id), { timeout: 20_000, interval: 50 }).toBeDefined();
  return id!;
}

/** Resets the run to its first workflow task; resolves to the new run's id. */
function resetToStart(handle: RunHandle): Promise<string> {
  return resetToFirstTask(worker.client.temporal, worker.config.temporal.namespace, handle.runId);
}

describe('a reset to before a decision', () => {
  it.each([
    ['update', (handle: RunHandle, id: string) => handle.approve(id, { reason: 'ok by me' }).then(() => undefined)],
    ['signal', (handle: RunHandle, id: string) => handle.signalDecision({ interruptId: id, approved: true, reason: 'ok by me' })],
  ])('re-applies a decision sent by %s when the hold comes back, and says so in status', async (_path, decide) => {
    const name = approvalAgent();
    const handle = await worker.client.start(name, 'go');
    const id = await waitForHold(handle);
    await decide(handle, id);
    const first = await handle.result();
    expect(first.text).toBe('done');
    expect(first.messages.at(-2)?.content[0]).toMatchObject({ toolResponse: { name: 'dangerous' } });

    const newRunId = await resetToStart(handle);
    // The reset run raises the same hold again; the re-applied decision answers it.
    const again = await worker.client.temporal.workflow.getHandle(handle.runId, newRunId).result();
    expect(again).toMatchObject({ finishReason: 'stop', text: first.text });
    const status = await handle.status();
    expect(status).toMatchObject({ state: 'completed', interrupts: [] });
    expect(status.reappliedDecisions).toEqual([{ interruptId: id, decision: 'approved', state: 'applied', toolName: 'dangerous' }]);
  });

  it('drops a re-applied decision whose hold never comes back, and the run still completes', async () => {
    // The model asks for the tool once; after the reset it answers straight away.
    let calls = 0;
    const name = `reset-${++agents}`;
    const model = scriptedModel({
      name: `scripted/${name}`,
      script: () => (++calls === 1 ? toolCallReply({ name: 'dangerous', input: { v: 'x' } }) : textReply(calls === 2 ? 'done' : 'changed my mind')),
    });
    registry.add(model, defineAgent({ name, model: model.name, tools: [dangerous], use: [toolApproval()] }));
    const handle = await worker.client.start(name, 'go');
    const id = await waitForHold(handle);
    await handle.approve(id);
    expect((await handle.result()).text).toBe('done');

    const newRunId = await resetToStart(handle);
    expect(await worker.client.temporal.workflow.getHandle(handle.runId, newRunId).result()).toMatchObject({ text: 'changed my mind' });
    expect((await handle.status()).reappliedDecisions).toEqual([
      { interruptId: id, decision: 'approved', state: 'dropped', reason: `the run ended before it raised hold ${id} again after the reset` },
    ]);
  });

  it('drops a re-applied decision when the hold with its id is for another tool, and that hold waits for a person', async () => {
    // Before the reset the model asks for `dangerous`; after it, for `echo`: both are held as i1.
    let calls = 0;
    const name = `reset-${++agents}`;
    const model = scriptedModel({
      name: `scripted/${name}`,
      script: (request) =>
        request.messages.at(-1)?.role === 'tool' ? textReply('done') : toolCallReply({ name: ++calls === 1 ? 'dangerous' : 'echo', input: { v: 'x' } }),
    });
    registry.add(model, defineAgent({ name, model: model.name, tools: [dangerous, echo], use: [toolApproval()] }));
    const handle = await worker.client.start(name, 'go');
    const id = await waitForHold(handle);
    await handle.approve(id);
    await handle.result();

    const newRunId = await resetToStart(handle);
    await expect.poll(async () => (await handle.status()).reappliedDecisions?.[0]?.state, { timeout: 20_000, interval: 100 }).toBe('dropped');
    const status = await handle.status();
    expect(status).toMatchObject({ state: 'waiting', interrupts: [{ id, toolName: 'echo' }] });
    expect(status.reappliedDecisions).toEqual([
      {
        interruptId: id,
        decision: 'approved',
        state: 'dropped',
        toolName: 'echo',
        reason: `hold ${id} holds tool "echo" (ref 0); the decision is for tool "dangerous" (ref 0)`,
      },
    ]);
    // A decision meant for the call now held goes through.
    await handle.approve(id);
    expect(await worker.client.temporal.workflow.getHandle(handle.runId, newRunId).result()).toMatchObject({ text: 'done' });
  });
});
