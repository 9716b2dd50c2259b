/**
 * Steering a running run (docs/steering.md), as real runs: a message sent while a tool call runs
 * is in the next model request, once; an update id sent twice adds it once (across
 * continue-as-new too); a run that has ended refuses it with why; `interrupt` cancels a slow model
 * call (never a tool call) and the call made again sees the message; a sub-agent is steered
 * through its root, and a session through its run in flight.
 */
import { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runErrorOf, type RunHandle } from '../src/client/keel-client';
import type { Message, ModelRequest } from '../src/core/messages';
import { STEER_METADATA_KEY } from '../src/core/steering';
import { defineAgent, defineTool } from '../src/define';
import { agents } from '../src/features/agents/agents';
import { scriptedModel, textReply, toolCallReply, type ScriptedModel, type ScriptedReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { sharedTestWorker } from './support/harness';

/** Tool calls that run until the test releases them, by key; each says whether it saw a cancellation. */
const started = new Set<string>();
const gates = new Map<string, () => void>();
const hold = defineTool({
  name: 'hold_until_released',
  description: 'Runs until released.',
  input: z.object({ key: z.string() }),
  output: z.object({ released: z.boolean(), cancelled: z.boolean() }),
  async run({ key }, context) {
    started.add(key);
    await new Promise<void>((resolve) => gates.set(key, resolve));
    return { released: true, cancelled: context.signal.aborted };
  },
});

async function toolStarted(key: string): Promise<void> {
  await expect.poll(() => started.has(key), { timeout: 20_000, interval: 50 }).toBe(true);
}

function release(key: string): void {
  gates.get(key)!();
}

const registry = new Registry().add(hold);
const worker = sharedTestWorker(registry);

let count = 0;
/** Registers an agent with a fresh scripted model. */
function agent(options: {
  name?: string;
  script: Array<ScriptedReply | ((request: ModelRequest) => ScriptedReply)>;
  use?: Parameters<typeof defineAgent>[0]['use'];
  session?: 'server' | 'client';
}): { name: string; model: ScriptedModel } {
  const name = options.name ?? `steering-${++count}`;
  const model = scriptedModel({ name: `scripted/${name}`, script: options.script });
  registry.add(model, defineAgent({ name, model: model.name, tools: [hold], use: options.use, session: options.session }));
  return { name, model };
}

/** The texts of the user messages of a request, in order. */
const userTexts = (messages: readonly Message[]) =>
  messages.filter((message) => message.role === 'user').flatMap((message) => message.content.flatMap((part) => ('text' in part ? [part.text] : [])));

/** The requests one run made to a model. */
const requestsOf = (model: ScriptedModel, runId: string) => model.requests.filter((request) => request.runId === runId).map((request) => request.request);

describe('update steer', () => {
  it('adds a message sent while a tool call runs to the next model request, once, and lists it in status', async () => {
    // Turns: 1. the model asks for the blocking tool; (steered meanwhile) 2. the model answers.
    const key = `tool-${Date.now()}`;
    const { name, model } = agent({ script: [toolCallReply({ name: 'hold_until_released', input: { key } }), textReply('done')] });
    const handle = await worker().client.start(name, 'start');
    await toolStarted(key);
    const sent = await handle.steer('also mention the weather', { steerId: `${key}-a` });
    expect(sent).toMatchObject({ id: `${key}-a`, text: 'also mention the weather', state: 'pending' });
    // The same update id again: answered with the same record, not added again.
    expect(await handle.steer('also mention the weather', { steerId: `${key}-a` })).toMatchObject({ id: `${key}-a`, state: 'pending' });
    expect((await handle.status()).steering).toEqual([expect.objectContaining({ id: `${key}-a`, state: 'pending' })]);
    release(key);
    const result = await handle.result();
    expect(result.text).toBe('done');

    const [first, second] = requestsOf(model, handle.runId);
    expect(userTexts(first!.messages)).toEqual(['start']);
    expect(userTexts(second!.messages)).toEqual(['start', 'also mention the weather']);
    // After the tool's answer, before the call that took it; recorded in the run's conversation with its id.
    expect(second!.messages.map((message) => message.role)).toEqual(['user', 'model', 'tool', 'user']);
    const steered = result.messages.filter((message) => message.metadata?.[STEER_METADATA_KEY] !== undefined);
    expect(steered).toEqual([expect.objectContaining({ role: 'user', metadata: { [STEER_METADATA_KEY]: { id: `${key}-a` } } })]);
    expect((await handle.status()).steering).toEqual([expect.objectContaining({ id: `${key}-a`, state: 'applied', turn: 2 })]);
  });

  it('takes several messages in the order they came, and answers one sent during the final model call with one more call', async () => {
    // Turns: 1. a slow final answer (two messages arrive meanwhile); 2. the answer to them.
    const { name, model } = agent({ script: [{ delayMs: 1500, text: 'first answer' }, textReply('second answer')] });
    const handle = await worker().client.start(name, 'start');
    await expect.poll(() => requestsOf(model, handle.runId).length, { timeout: 20_000, interval: 50 }).toBe(1);
    await handle.steer('one');
    await handle.steer('two');
    const result = await handle.result();
    expect(result.text).toBe('second answer');
    expect(userTexts(requestsOf(model, handle.runId)[1]!.messages)).toEqual(['start', 'one', 'two']);
    expect(result.messages.map((message) => message.role)).toEqual(['user', 'model', 'user', 'user', 'model']);
  });

  it('takes a burst of 100 steers sent at once, each once: the server refusing updates in flight is retried with the same id', async () => {
    // Turns: 1. the model asks for the blocking tool (100 steers arrive meanwhile, ten times the server's 10 updates in flight); 2. the answer.
    // The refusals are retried first by the SDK's own gRPC retry, with its backoff: 300 took a minute on an idle machine, over two on a busy one.
    const key = `burst-${Date.now()}`;
    const { name, model } = agent({ script: [toolCallReply({ name: 'hold_until_released', input: { key } }), textReply('done')] });
    const handle = await worker().client.start(name, 'start');
    await toolStarted(key);
    const texts = Array.from({ length: 100 }, (_, index) => `note ${index}`);
    const sent = await Promise.allSettled(texts.map((text, index) => handle.steer(text, { steerId: `${key}-${index}` })));
    expect(sent.filter((outcome) => outcome.status === 'rejected').map((outcome) => String(outcome.reason))).toEqual([]);
    release(key);
    await handle.result();
    const taken = userTexts(requestsOf(model, handle.runId)[1]!.messages).slice(1);
    expect(taken.sort()).toEqual([...texts].sort());
  });

  it('refuses an empty text, and a run that has ended, saying why', async () => {
    const { name } = agent({ script: [textReply('done')] });
    const handle = await worker().client.start(name, 'start');
    await handle.result();
    const ended = await handle.steer('too late').catch((error: unknown) => runErrorOf(error));
    expect(ended).toMatchObject({ status: 'FAILED_PRECONDITION', message: `run "${handle.runId}" has ended (completed); it takes no more steering` });

    const key = `empty-${Date.now()}`;
    const running = agent({ script: [toolCallReply({ name: 'hold_until_released', input: { key } }), textReply('done')] });
    const other = await worker().client.start(running.name, 'start');
    await toolStarted(key);
    const empty = await other.steer('  ').catch((error: unknown) => runErrorOf(error));
    expect(empty).toMatchObject({ status: 'INVALID_ARGUMENT', message: 'invalid steer: text: must not be empty' });
    release(key);
    await other.result();
    expect((await other.status()).steering).toBeUndefined();
  });
});

describe('update steer with interrupt', () => {
  it('cancels a slow model call and calls again at once with the message', async () => {
    // Turns: 1. a model call that would take 60 s (cancelled by the steer); 1 again. the answer.
    const { name, model } = agent({ script: [{ delayMs: 60_000, text: 'slow answer' }, textReply('steered answer')] });
    const handle = await worker().client.start(name, 'start');
    await expect.poll(() => requestsOf(model, handle.runId).length, { timeout: 20_000, interval: 50 }).toBe(1);
    const began = Date.now();
    const record = await handle.steer('stop, answer this instead', { interrupt: true });
    expect(record).toMatchObject({ state: 'pending', interrupt: true, cancelledModelCall: true });
    const result = await handle.result();
    expect(Date.now() - began).toBeLessThan(20_000);
    expect(result.text).toBe('steered answer');
    expect(userTexts(requestsOf(model, handle.runId)[1]!.messages)).toEqual(['start', 'stop, answer this instead']);
    // The cancelled call's partial answer is not in the conversation; the turn is counted once.
    expect(result.messages.map((message) => message.role)).toEqual(['user', 'user', 'model']);
    expect(result.turns).toBe(1);
    const history = await worker().client.temporal.workflow.getHandle(handle.runId).fetchHistory();
    const cancelRequested = (history.events ?? []).filter(
      (event) => event.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
    );
    expect(cancelRequested).toHaveLength(1);
  });

  it('never cancels a tool call in flight: the message waits for the next model call', async () => {
    const key = `interrupt-tool-${Date.now()}`;
    const { name, model } = agent({ script: [toolCallReply({ name: 'hold_until_released', input: { key } }), textReply('done')] });
    const handle = await worker().client.start(name, 'start');
    await toolStarted(key);
    const record = await handle.steer('after the tool, please', { interrupt: true });
    expect(record.cancelledModelCall).toBeUndefined();
    // Give a cancellation time to reach the tool, if one were sent.
    await new Promise((resolve) => setTimeout(resolve, 500));
    release(key);
    const result = await handle.result();
    const toolMessage = result.messages.find((message) => message.role === 'tool')!;
    expect(toolMessage.content[0]).toMatchObject({ toolResponse: { output: { released: true, cancelled: false } } });
    expect(userTexts(requestsOf(model, handle.runId)[1]!.messages)).toEqual(['start', 'after the tool, please']);
  });
});

describe('steering across continue-as-new', () => {
  it('keeps the update ids it took: the same id sent to the next run of the chain is not added again', async () => {
    // Turns: 1. tool (steered); 2. tool (the run continues as new before it; the same id is sent again); 3. answer.
    const key = `can-${Date.now()}`;
    const { name, model } = agent({
      script: [
        toolCallReply({ name: 'hold_until_released', input: { key: `${key}-1` } }),
        toolCallReply({ name: 'hold_until_released', input: { key: `${key}-2` } }),
        textReply('done'),
      ],
    });
    const handle: RunHandle = await worker().client.start(name, 'start', { continueAsNewAt: { historyEvents: 1, historyBytes: 64 * 1024 * 1024 } });
    await toolStarted(`${key}-1`);
    await handle.steer('once only', { steerId: `${key}-steer` });
    release(`${key}-1`);
    await toolStarted(`${key}-2`);
    // The first run of the chain has closed: the run continued as new.
    let executions = 0;
    for await (const _ of worker().client.temporal.workflow.list({ query: `WorkflowId = '${handle.runId}'` })) executions += 1;
    expect(executions).toBeGreaterThan(1);
    expect(await handle.steer('once only', { steerId: `${key}-steer` })).toMatchObject({ id: `${key}-steer`, state: 'applied', turn: 2 });
    release(`${key}-2`);
    const result = await handle.result();
    expect(userTexts(requestsOf(model, handle.runId)[2]!.messages)).toEqual(['start', 'once only']);
    expect(userTexts(result.messages)).toEqual(['start', 'once only']);
  });
});

describe('steering a sub-agent and a session', () => {
  it('steers a sub-agent run addressed through its root (<agent>-1)', async () => {
    const key = `child-${Date.now()}`;
    const child = agent({
      name: `steering-child-${++count}`,
      script: [toolCallReply({ name: 'hold_until_released', input: { key } }), textReply('child done')],
    });
    const root = agent({
      script: [toolCallReply({ name: `delegate_to_${child.name}`, input: { task: 'work' } }), textReply('root done')],
      use: [agents({ agents: [child.name] })],
    });
    const handle = await worker().client.start(root.name, 'start');
    await toolStarted(key);
    const record = await handle.steer('child: hurry', { agent: `${child.name}-1` });
    expect(record).toMatchObject({ state: 'pending', text: 'child: hurry' });
    release(key);
    expect((await handle.result()).text).toBe('root done');
    const childRunId = `${handle.runId}/${child.name}-1`;
    expect(userTexts(requestsOf(child.model, childRunId)[1]!.messages)).toEqual(['work', 'child: hurry']);
    expect(requestsOf(root.model, handle.runId).flatMap((request) => userTexts(request.messages))).not.toContain('child: hurry');

    const missing = await handle.steer('nobody', { agent: `${child.name}-7` }).catch((error: unknown) => runErrorOf(error));
    expect(missing).toMatchObject({
      status: 'NOT_FOUND',
      message: `run "${handle.runId}" has no sub-agent run "${child.name}-7" (no run "${handle.runId}/${child.name}-7", nor a session "session/${child.name}/${handle.runId}/${child.name}-7")`,
    });
  });

  it('steers the run in flight of a server-managed sub-agent addressed through its root', async () => {
    const key = `session-child-${Date.now()}`;
    const child = agent({
      name: `steering-keeper-${++count}`,
      session: 'server',
      script: [toolCallReply({ name: 'hold_until_released', input: { key } }), textReply('kept')],
    });
    const root = agent({
      script: [toolCallReply({ name: `delegate_to_${child.name}`, input: { task: 'keep it' } }), textReply('root done')],
      use: [agents({ agents: [child.name] })],
    });
    const handle = await worker().client.start(root.name, 'start');
    await toolStarted(key);
    expect(await handle.steer('keeper: hurry', { agent: `${child.name}-1` })).toMatchObject({ state: 'pending' });
    release(key);
    expect((await handle.result()).text).toBe('root done');
    const turnRunId = `session/${child.name}/${handle.runId}/${child.name}-1/run-1`;
    expect(userTexts(requestsOf(child.model, turnRunId)[1]!.messages)).toEqual(['keep it', 'keeper: hurry']);
  });

  it("steers a session's run in flight, and says so when none runs", async () => {
    const key = `session-${Date.now()}`;
    const { name, model } = agent({
      session: 'server',
      script: [toolCallReply({ name: 'hold_until_released', input: { key } }), textReply('turn done'), textReply('second turn')],
    });
    const session = worker().client.session(name, `steer-${Date.now()}`);
    const none = await session.steer('nothing runs').catch((error: unknown) => runErrorOf(error));
    expect(none).toMatchObject({ status: 'NOT_FOUND' });
    const sent = await session.send('start', { detach: true });
    await toolStarted(key);
    expect(await session.steer('during the run')).toMatchObject({ state: 'pending' });
    release(key);
    expect(await session.waitForSnapshot(sent.snapshotId)).toMatchObject({ status: 'completed' });
    expect(userTexts(requestsOf(model, sent.runId)[1]!.messages)).toEqual(['start', 'during the run']);
    const idle = await session.steer('after it').catch((error: unknown) => runErrorOf(error));
    expect(idle).toMatchObject({ status: 'FAILED_PRECONDITION', message: expect.stringContaining('has no run in flight (its latest run, snapshot') });
  });
});

describe('steering a workflow without the steer handler', () => {
  it('says the worker running it does not know steering, not Temporal\'s "no registered handler"', async () => {
    // A session's own workflow has no steer handler (its runs do): it stands in for a run on a worker that predates steering.
    const { name } = agent({ session: 'server', script: [textReply('turn done')] });
    const session = worker().client.session(name, `no-steer-${Date.now()}`);
    await session.send('start');
    const refused = await worker()
      .client.getHandle(session.workflowId)
      .steer('hello')
      .catch((error: unknown) => runErrorOf(error));
    expect(refused).toMatchObject({
      status: 'UNIMPLEMENTED',
      message: expect.stringContaining(
        `run "${session.workflowId}": the worker running it does not know steering (no "steer" update handler: a worker deployed with keel 0.1.0 or before`,
      ),
    });
  });
});
