/**
 * What a user observes about a run besides its answer: history (every call an activity,
 * the conversation recorded once), the status query while it runs, and cancellation.
 */
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runErrorOf } from '../src/client/keel-client';
import { defineAgent, defineTool } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { GENERATE_WORKFLOW } from '../src/core/protocol';
import { blob, echo } from './fixtures/tools';
import { markerCount, scheduledActivities } from './support/history';
import { startTestWorker, type TestWorker } from './support/harness';

let started!: () => void;
const toolStarted = new Promise<void>((resolve) => (started = resolve));
const wait = defineTool({
  name: 'wait',
  description: 'Waits until cancelled or for ms milliseconds.',
  input: z.object({ ms: z.number() }),
  async run({ ms }, { signal }) {
    started();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(new Error('aborted'));
      });
    });
    return { waited: ms };
  },
});

const registry = new Registry().add(echo, blob, wait);
let worker: TestWorker;
beforeAll(async () => {
  worker = await startTestWorker(registry);
});
afterAll(async () => {
  await worker?.stop();
});

describe.concurrent('run history', () => {
  it('records every model and tool call as a scheduled activity, and the agent lookup before them', async () => {
    // turn 1: two echo calls; turn 2: one echo call; turn 3: text
    const model = scriptedModel({
      name: 'scripted/history',
      script: [
        toolCallReply([
          { name: 'echo', input: { v: 'a' } },
          { name: 'echo', input: { v: 'b' } },
        ]),
        toolCallReply({ name: 'echo', input: { v: 'c' } }),
        textReply('done'),
      ],
    });
    registry.add(model, defineAgent({ name: 'history', model: model.name, tools: [echo] }));
    const handle = await worker.client.start('history', 'hi');
    await handle.result();
    expect(await scheduledActivities(worker.client.temporal, handle.runId)).toEqual([
      'callModel',
      'callTool',
      'callTool',
      'callModel',
      'callTool',
      'callModel',
    ]);
    // The lookup is an activity of its own (a workflow task boundary before middleware setup), recorded once.
    const history = await worker.client.temporal.workflow.getHandle(handle.runId).fetchHistory();
    const types = (history.events ?? []).flatMap((event) =>
      event.activityTaskScheduledEventAttributes ? [event.activityTaskScheduledEventAttributes.activityType?.name] : [],
    );
    expect(types[0]).toBe('resolveAgent');
    expect(types.filter((type) => type === 'resolveAgent')).toHaveLength(1);
    expect(await markerCount(worker.client.temporal, handle.runId)).toBe(0);
  });

  it('does not copy the conversation into each model call (inputs stay small as it grows)', async () => {
    // turns 1-3: a tool that returns 20 KB; turn 4: text
    const call = { name: 'blob', input: { size: 20_000 } };
    const model = scriptedModel({ name: 'scripted/by-reference', script: [toolCallReply(call), toolCallReply(call), toolCallReply(call), textReply('done')] });
    registry.add(model, defineAgent({ name: 'by-reference', model: model.name, tools: [blob] }));
    const handle = await worker.client.start('by-reference', 'hi');
    await handle.result();
    // the model still saw the whole conversation, read back from the run
    expect(model.requests[3]!.request.messages).toHaveLength(7);
    const history = await worker.client.temporal.workflow.getHandle(handle.runId).fetchHistory();
    const modelInputs = (history.events ?? [])
      .filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel')
      .map((event) => temporal.api.common.v1.Payloads.encode(event.activityTaskScheduledEventAttributes!.input!).finish().length);
    expect(modelInputs).toHaveLength(4);
    for (const size of modelInputs) expect(size).toBeLessThan(1024);
  });
});

// toolStarted is the first wait call of the file, and the status is read in its 1.5 s: this test runs on its own.
describe('query status', () => {
  it('reports the turn, usage and (no) pending holds while a tool runs, then the outcome', async () => {
    const model = scriptedModel({
      name: 'scripted/status',
      script: [
        toolCallReply({ name: 'wait', input: { ms: 1500 } }, { usage: { inputTokens: 7, outputTokens: 2 } }),
        textReply('finished', { usage: { inputTokens: 9, outputTokens: 1 } }),
      ],
    });
    registry.add(model, defineAgent({ name: 'status', model: model.name, tools: [wait] }));
    const handle = await worker.client.start('status', 'hi');
    await toolStarted;
    const during = await handle.status();
    expect(during).toMatchObject({ state: 'running', agent: 'status', turn: 1, usage: { inputTokens: 7, outputTokens: 2 }, interrupts: [] });
    await handle.result();
    const after = await handle.status();
    expect(after).toMatchObject({ state: 'completed', turn: 2, finishReason: 'stop', text: 'finished', usage: { inputTokens: 16, outputTokens: 3 } });
  });
});

describe.concurrent('cancel', () => {
  it('cancels the tool under way and ends the run cancelled, keeping what it had', async ({ expect }) => {
    const model = scriptedModel({ name: 'scripted/cancel', script: [toolCallReply({ name: 'wait', input: { ms: 60_000 } }, { text: 'working on it' })] });
    registry.add(model, defineAgent({ name: 'cancel', model: model.name, tools: [wait] }));
    const handle = await worker.client.start('cancel', 'hi');
    await expect.poll(async () => (await handle.status()).turn, { timeout: 10_000 }).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await handle.cancel();
    const error = await handle.result().then(() => undefined, runErrorOf);
    expect(error?.status).toBe('CANCELLED');
    // The 60 s tool was cancelled, not waited for.
    const history = await worker.client.temporal.workflow.getHandle(handle.runId).fetchHistory();
    expect((history.events ?? []).some((event) => event.activityTaskCancelRequestedEventAttributes)).toBe(true);
    // Completed: the agent lookup and the one model call; never the tool.
    expect((history.events ?? []).filter((event) => event.activityTaskCompletedEventAttributes)).toHaveLength(2);
    const status = await handle.status();
    expect(status).toMatchObject({ state: 'cancelled', finishReason: 'aborted', text: 'working on it' });
    expect((await handle.describe()).status.name).toBe('CANCELLED');
  });
});

describe.concurrent('start input', () => {
  it('refuses an unknown field in the start input, naming it, before any call', async () => {
    const model = scriptedModel({ name: 'scripted/strict-input', script: [textReply('never')] });
    registry.add(model, defineAgent({ name: 'strict-input', model: model.name }));
    // A client that is not keel's sends the input as plain JSON, with a misspelt field.
    const handle = await worker.client.temporal.workflow.start(GENERATE_WORKFLOW, {
      taskQueue: worker.taskQueue,
      workflowId: `strict-input-${Date.now()}`,
      args: [{ agent: 'strict-input', messages: [{ role: 'user', content: [{ text: 'hi' }] }], maxTurn: 3 } as never],
    });
    const error = await handle.result().then(() => undefined, runErrorOf);
    expect(error).toMatchObject({ status: 'INVALID_ARGUMENT', message: 'invalid run input: (root): Unrecognized key: "maxTurn"' });
    expect(model.requests).toHaveLength(0);
  });
});

describe.concurrent('a run ended from outside', () => {
  it('reports terminated, with who and why, when Temporal terminated it', async ({ expect }) => {
    const model = scriptedModel({ name: 'scripted/terminated', script: [toolCallReply({ name: 'wait', input: { ms: 60_000 } })] });
    registry.add(model, defineAgent({ name: 'terminated', model: model.name, tools: [wait] }));
    const handle = await worker.client.start('terminated', 'hi');
    await expect.poll(async () => (await handle.status()).turn, { timeout: 10_000 }).toBe(1);
    // As an operator would, with Temporal's own tools.
    await worker.client.temporal.workflow.getHandle(handle.runId).terminate('stuck in a loop');
    const status = await handle.status();
    expect(status.state).toBe('terminated');
    expect(status.error).toMatchObject({ status: 'ABORTED', message: expect.stringMatching(/^the run was terminated( by \S+)?: stuck in a loop$/) as unknown });
    expect(status.interrupts).toEqual([]);
  });
});
