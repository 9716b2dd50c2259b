/**
 * Sessions (docs/sessions.md): a server-managed agent keeps its conversation in a session
 * workflow; each message is an update that runs a child generate run and records a snapshot.
 * Client-managed agents carry their state in and out of each run.
 */
import { describe, expect, it } from 'vitest';
import { runErrorOf } from '../src/client/keel-client';
import type { ModelRequest } from '../src/core/messages';
import { defineAgent } from '../src/define';
import { artifacts } from '../src/features/artifacts/artifacts';
import { budget } from '../src/features/budget/budget';
import { errorReply, scriptedModel, textReply, toolCallReply, type ScriptedReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { sharedTestWorker } from './support/harness';

const registry = new Registry();
const worker = sharedTestWorker(registry);

let count = 0;
function agent(options: {
  session?: 'server' | 'client';
  script: ScriptedReply[] | ((request: ModelRequest) => ScriptedReply);
  use?: Parameters<typeof defineAgent>[0]['use'];
}) {
  const name = `sessions-${++count}`;
  const model = scriptedModel({ name: `scripted/${name}`, script: options.script });
  registry.add(model, defineAgent({ name, model: model.name, session: options.session ?? 'server', use: options.use }));
  return { name, model };
}

/** The user texts of a request, in order. */
const userTexts = (request: ModelRequest) =>
  request.messages.filter((message) => message.role === 'user').map((message) => (message.content[0] as { text: string }).text);

describe.concurrent('server-managed sessions', () => {
  it('keeps the conversation across runs, each a child run with a snapshot chained to the last', async () => {
    // run 1: "my name is Ada" → "hello Ada"; run 2: "what is my name?" → the model sees run 1
    const { name, model } = agent({ script: (request) => textReply(`heard ${userTexts(request).length}`) });
    const session = worker().client.session(name, `ada-${Date.now()}`);
    const first = await session.send('my name is Ada');
    const second = await session.send('what is my name?');
    expect([first.text, second.text]).toEqual(['heard 1', 'heard 2']);
    expect(userTexts(model.requests[1]!.request)).toEqual(['my name is Ada', 'what is my name?']);
    expect(
      model.requests[1]!.request.messages.filter((message) => message.role === 'model').map((message) => (message.content[0] as { text: string }).text),
    ).toEqual(['heard 1']);
    expect(second).toMatchObject({ sessionId: session.sessionId, status: 'completed', finishReason: 'stop', runId: `${session.workflowId}/run-2` });
    const latest = await session.snapshot();
    expect(latest).toMatchObject({ snapshotId: second.snapshotId, parentId: first.snapshotId, status: 'completed', finishReason: 'stop', messageCount: 4 });
    expect(await session.snapshot(first.snapshotId)).toMatchObject({ snapshotId: first.snapshotId, status: 'completed', messageCount: 2 });
    expect((await worker().client.getHandle(second.runId).result()).text).toBe('heard 2');
  });

  it('records no snapshot for a failed run, and starts a run from an earlier snapshot when asked', async () => {
    // run 1 ok; run 2 fails (the model errors); run 3 from run 1's snapshot sees only run 1
    const { name, model } = agent({
      script: (request) => (userTexts(request).at(-1) === 'fail' ? errorReply('PERMISSION_DENIED', 'no') : textReply(`seen ${userTexts(request).join(',')}`)),
    });
    const session = worker().client.session(name, `fail-${Date.now()}`);
    const first = await session.send('one');
    await expect(session.send('fail')).rejects.toMatchObject({ status: 'PERMISSION_DENIED', message: 'no' });
    expect((await session.snapshot()).snapshotId).toBe(first.snapshotId);
    const second = await session.send('two');
    const third = await session.send('three', { snapshotId: first.snapshotId });
    expect([second.text, third.text]).toEqual(['seen one,two', 'seen one,three']);
    expect(model.requests).toHaveLength(4);
  });

  it('answers the reference’s errors: an unknown snapshot, state for a server-managed agent, a session id for a client-managed one', async () => {
    const server = agent({ script: [textReply('x')] });
    const client = agent({ session: 'client', script: [textReply('x')] });
    const session = worker().client.session(server.name, `errors-${Date.now()}`);
    await expect(session.snapshot()).rejects.toMatchObject({ status: 'NOT_FOUND' });
    await session.send('hi');
    await expect(session.snapshot('nope')).rejects.toMatchObject({ status: 'NOT_FOUND', message: expect.stringContaining('snapshot "nope" not found') });
    await expect(session.send('again', { snapshotId: 'nope' })).rejects.toMatchObject({
      status: 'NOT_FOUND',
      message: expect.stringContaining('snapshot "nope" not found'),
    });
    expect(
      await worker()
        .client.run(server.name, 'hi', { state: { messages: [] } })
        .then(() => undefined, runErrorOf),
    ).toMatchObject({
      status: 'INVALID_ARGUMENT',
      message: `agent "${server.name}" keeps its conversation on the server (session: 'server'): send a session id, not state`,
    });
    await expect(worker().client.session(client.name, 'x').send('hi')).rejects.toMatchObject({
      status: 'INVALID_ARGUMENT',
      message: `agent "${client.name}" is client-managed (session: 'client'): send its state, not a session id`,
    });
  });

  it('detaches a run with a pending snapshot that settles later, and aborts one in flight', async ({ expect }) => {
    const { name } = agent({
      script: (request) => textReply(`done ${userTexts(request).at(-1)}`, { delayMs: userTexts(request).at(-1) === 'slow' ? 20_000 : 500 }),
    });
    const session = worker().client.session(name, `detach-${Date.now()}`);
    const pending = await session.send('quick', { detach: true });
    expect(pending).toMatchObject({ status: 'pending', finishReason: 'detached', text: '' });
    expect(await session.waitForSnapshot(pending.snapshotId)).toMatchObject({ snapshotId: pending.snapshotId, status: 'completed', finishReason: 'stop' });
    const slow = await session.send('slow', { detach: true });
    await expect
      .poll(
        async () =>
          (
            await worker()
              .client.getHandle(slow.runId)
              .status()
              .catch(() => undefined)
          )?.state,
        { timeout: 10_000 },
      )
      .toBe('running');
    expect(await session.abort()).toMatchObject({ snapshotId: slow.snapshotId, status: 'aborting' });
    expect(await session.waitForSnapshot(slow.snapshotId)).toMatchObject({ status: 'aborted', finishReason: 'aborted' });
    expect(await session.abort()).toBeNull();
  });

  it('counts a session-scoped budget across runs: the second run stops before any model call', async () => {
    // run 1 spends 20 of 15: it finishes its model call, then the check stops it (aborted, usage recorded)
    // run 2 starts at 20 of 15: stopped before its first model call
    const { name, model } = agent({
      script: (request) => (request.messages.at(-1)?.role === 'tool' ? textReply('x') : textReply('spent', { usage: { inputTokens: 20 } })),
      use: [budget({ limit: { inputTokens: 15 }, scope: 'session' })],
    });
    const session = worker().client.session(name, `budget-${Date.now()}`);
    const first = await session.send('one');
    expect(first).toMatchObject({ status: 'completed', usage: { inputTokens: 20 } });
    const second = await session.send('two');
    expect(second).toMatchObject({ status: 'aborted', finishReason: 'aborted', error: { status: 'ABORTED', message: 'budget: used 20 of 15 inputTokens' } });
    expect(model.requests).toHaveLength(1);
  });
});

describe.concurrent('sessions under load and misuse', () => {
  it('runs messages sent at once one after another, each on the history the one before left', async () => {
    const { name } = agent({ script: (request) => textReply(`heard ${userTexts(request).length}`, { delayMs: 200 }) });
    const session = worker().client.session(name, `concurrent-${Date.now()}`);
    const outputs = await Promise.all(['a', 'b', 'c'].map((text) => session.send(text)));
    expect(outputs.map((output) => output.text).sort()).toEqual(['heard 1', 'heard 2', 'heard 3']);
    expect(await session.snapshot()).toMatchObject({ messageCount: 6 });
  });

  it('keeps counting what the session spent when a run starts from an earlier snapshot', async () => {
    // run 1 spends 10 (snapshot s1); run 2 spends 10 (20 of 15); a run from s1 is still over the session's limit
    const { name, model } = agent({
      script: [textReply('one', { usage: { inputTokens: 10 } }), textReply('two', { usage: { inputTokens: 10 } }), textReply('never')],
      use: [budget({ limit: { inputTokens: 15 }, scope: 'session' })],
    });
    const session = worker().client.session(name, `branch-${Date.now()}`);
    const first = await session.send('one');
    await session.send('two');
    expect(await session.send('again', { snapshotId: first.snapshotId })).toMatchObject({
      status: 'aborted',
      error: { status: 'ABORTED', message: 'budget: used 20 of 15 inputTokens' },
    });
    expect(model.requests).toHaveLength(2);
  });

  it('answers an invocation sent again with the same request id with its first answer, without another run', async () => {
    const { name, model } = agent({ script: (request) => textReply(`run with ${userTexts(request).length} user messages`) });
    const session = worker().client.session(name, `idempotent-${Date.now()}`);
    const first = await session.send('once', { requestId: 'req-1' });
    const again = await session.send('once', { requestId: 'req-1' });
    expect(again).toEqual(first);
    expect(model.requests).toHaveLength(1);
    expect((await session.send('twice', { requestId: 'req-2' })).text).toBe('run with 2 user messages');
  });

  it('keeps what a run stopped by its budget wrote', async () => {
    // run 1: write notes.md (20 tokens of 15), then the check before call 2 stops the run; the session keeps the artifact
    const { name } = agent({
      script: [toolCallReply({ name: 'write_artifact', input: { name: 'notes.md', content: 'kept' } }, { usage: { inputTokens: 20 } }), textReply('never')],
      use: [budget({ limit: { inputTokens: 15 }, scope: 'session' }), artifacts()],
    });
    const session = worker().client.session(name, `stopped-${Date.now()}`);
    expect(await session.send('write')).toMatchObject({ status: 'aborted', artifacts: [{ name: 'notes.md', parts: [{ text: 'kept' }] }] });
  });

  it('ends a session started for an agent that does not exist', async ({ expect }) => {
    const session = worker().client.session('no-such-agent', `ghost-${Date.now()}`);
    await expect(session.send('hi')).rejects.toMatchObject({
      status: 'NOT_FOUND',
      message: expect.stringContaining('agent "no-such-agent" is not registered'),
    });
    await expect
      .poll(async () => (await worker().client.temporal.workflow.getHandle(session.workflowId).describe()).status.name, { timeout: 10_000 })
      .toBe('COMPLETED');
  });
});

describe.concurrent('client-managed state', () => {
  it('takes the conversation in and gives it back, with artifacts and custom data', async () => {
    const { name, model } = agent({ session: 'client', script: (request) => textReply(`seen ${userTexts(request).join(',')}`) });
    const first = await worker().client.run(name, 'one', { state: { custom: { step: 1 } } });
    expect(first.state).toEqual({
      messages: [
        { role: 'user', content: [{ text: 'one' }] },
        { role: 'model', content: [{ text: 'seen one' }] },
      ],
      artifacts: [],
      custom: { step: 1 },
    });
    const second = await worker().client.run(name, 'two', { state: first.state });
    expect(second.text).toBe('seen one,two');
    expect(second.state!.messages).toHaveLength(4);
    expect(userTexts(model.requests[1]!.request)).toEqual(['one', 'two']);
  });
});
