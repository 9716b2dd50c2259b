/**
 * One budget for the whole tree of runs: the run where a Budget is set keeps a ledger, and every
 * model call of a run below it (parallel sync sub-agents, background tasks, a second level, a
 * session sub-agent's turn) is asked of it before and told to it after. Real runs on a real
 * server; the bound checked is the documented one: the limit plus what the calls in flight when
 * it was crossed report.
 */
import { describe, expect, it } from 'vitest';
import type { ModelRequest } from '../src/core/messages';
import type { Hold } from '../src/core/run';
import { defineAgent } from '../src/define';
import { agents } from '../src/features/agents/agents';
import { budget } from '../src/features/budget/budget';
import { runErrorOf } from '../src/client/keel-client';
import { messagesQuery } from '../src/core/protocol';
import { scriptedModel, textReply, toolCallReply, type ScriptedReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { z } from 'zod';
import { defineTool } from '../src/define';
import { echo } from './fixtures/tools';
import { signalWithCli } from './support/temporal-cli';
import { sharedTestWorker } from './support/harness';

const registry = new Registry();
const worker = sharedTestWorker(registry);

let count = 0;
function agent(options: {
  script: ScriptedReply[] | ((request: ModelRequest) => ScriptedReply);
  use?: Parameters<typeof defineAgent>[0]['use'];
  session?: 'server';
}) {
  const name = `tree-${++count}`;
  const model = scriptedModel({ name: `scripted/${name}`, script: options.script });
  registry.add(model, defineAgent({ name, model: model.name, use: options.use, tools: [echo], ...(options.session ? { session: options.session } : {}) }));
  return { name, model };
}

/** A sub-agent that never stops on its own: every call spends `tokens` and asks for echo again. */
const spender = (tokens: number, options: { session?: 'server' } = {}) =>
  agent({ script: () => toolCallReply({ name: 'echo', input: { v: 'more' } }, { usage: { totalTokens: tokens }, delayMs: 50 }), ...options });

/** Every tool output of a conversation, in order. */
const toolOutputs = (messages: Array<{ role: string; content: unknown[] }>) =>
  messages
    .filter((message) => message.role === 'tool')
    .flatMap((message) => message.content.map((part) => (part as { toolResponse: { name: string; output: unknown } }).toolResponse));

/** The task ids the delegations of a request's conversation launched. */
const launched = (request: ModelRequest): string[] =>
  request.messages
    .flatMap((message) => message.content)
    .flatMap((part) =>
      'toolResponse' in part && (part.toolResponse.output as { taskId?: string })?.taskId ? [(part.toolResponse.output as { taskId: string }).taskId] : [],
    );

/** A tool named `name` that waits in its call until the test calls `release`; `waiting` settles once a call is in it. */
function gateTool(name: string) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const waiting = new Promise<void>((resolve) => (entered = resolve));
  const gate = defineTool({
    name,
    description: 'Waits for the test.',
    input: z.object({}),
    run: async () => {
      entered();
      await released;
      return { ok: true };
    },
  });
  return { gate, waiting, release };
}

const LIMIT = 100;

describe.concurrent('one budget for the whole tree', () => {
  it('parallel sync sub-agents: every call counts as it happens; the tree stops at the limit plus the calls in flight, the root ABORTED', async () => {
    const a = spender(20);
    const b = spender(20);
    const root = agent({
      script: [
        toolCallReply(
          [
            { name: `delegate_to_${a.name}`, input: { task: 'a' } },
            { name: `delegate_to_${b.name}`, input: { task: 'b' } },
          ],
          { usage: { totalTokens: 10 } },
        ),
        textReply('never'),
      ],
      use: [budget({ limit: { totalTokens: LIMIT } }), agents({ agents: [a.name, b.name] })],
    });
    const handle = await worker().client.start(root.name, 'go');
    const error = await handle.result().then(() => undefined, runErrorOf);
    expect(error).toMatchObject({ status: 'ABORTED', message: expect.stringMatching(/^budget: used \d+ of 100 totalTokens$/) });
    const status = await handle.status();
    const calls = a.model.requests.length + b.model.requests.length;
    // the ledger counted every call of the tree
    expect(status.treeUsage).toEqual({ totalTokens: 10 + 20 * calls });
    // two runs call at once: at most one call each was in flight when the limit was crossed
    expect(status.treeUsage!.totalTokens).toBeGreaterThanOrEqual(LIMIT);
    expect(status.treeUsage!.totalTokens).toBeLessThanOrEqual(LIMIT + 2 * 20);
    expect(root.model.requests).toHaveLength(1);
    const messages = await worker().client.temporal.workflow.getHandle(handle.runId).query(messagesQuery, 0);
    for (const response of toolOutputs(messages)) expect(response.output).toEqual({ response: expect.stringMatching(/budget: used \d+ of 100 totalTokens/) });
  });

  it('background tasks: stopped by the ledger, their usage still counts, and the root ends with the budget outcome', async () => {
    const a = spender(20);
    const b = spender(20);
    const root = agent({
      script: [
        toolCallReply(
          [
            { name: `delegate_to_${a.name}`, input: { task: 'a', background: true } },
            { name: `delegate_to_${b.name}`, input: { task: 'b', background: true } },
          ],
          { usage: { totalTokens: 10 } },
        ),
        (request: ModelRequest) => toolCallReply({ name: 'wait_for_background_tasks', input: { taskIds: launched(request) } }),
        textReply('never'),
      ] as unknown as ScriptedReply[],
      use: [budget({ limit: { totalTokens: LIMIT } }), agents({ agents: [a.name, b.name], async: true })],
    });
    const handle = await worker().client.start(root.name, 'go');
    expect(await handle.result().then(() => undefined, runErrorOf)).toMatchObject({
      status: 'ABORTED',
      message: expect.stringMatching(/^budget: used \d+ of 100 totalTokens$/),
    });
    const status = await handle.status();
    const calls = a.model.requests.length + b.model.requests.length;
    expect(status.treeUsage).toEqual({ totalTokens: 10 + 20 * calls });
    expect(status.treeUsage!.totalTokens).toBeLessThanOrEqual(LIMIT + 2 * 20);
    // the root's model was not called again after the tasks crossed the limit
    expect(root.model.requests).toHaveLength(2);
    const waited = toolOutputs(await worker().client.temporal.workflow.getHandle(handle.runId).query(messagesQuery, 0)).find(
      (response) => response.name === 'wait_for_background_tasks',
    );
    expect((waited!.output as { tasks: Array<{ status: string }> }).tasks.map((task) => task.status)).toEqual(['aborted', 'aborted']);
  });

  it('with interrupt: a tree that crossed the limit while the root waited holds the root before its next model call; approval renews it for the tree', async ({
    expect,
  }) => {
    const a = spender(20);
    const root = agent({
      script: [
        toolCallReply({ name: `delegate_to_${a.name}`, input: { task: 'a', background: true } }, { usage: { totalTokens: 10 } }),
        (request: ModelRequest) => toolCallReply({ name: 'wait_for_background_tasks', input: { taskIds: launched(request) } }),
        textReply('done', { usage: { totalTokens: 10 } }),
      ] as unknown as ScriptedReply[],
      use: [budget({ limit: { totalTokens: LIMIT }, interrupt: true }), agents({ agents: [a.name], async: true })],
    });
    const handle = await worker().client.start(root.name, 'go');
    let pending: Hold[] = [];
    await expect.poll(async () => (pending = await handle.pendingHolds()).length, { timeout: 30_000, interval: 100 }).toBe(1);
    expect(pending[0]).toMatchObject({
      kind: 'budget',
      toolName: '(next model call)',
      question: expect.stringMatching(/^Usage budget reached: used \d+ of 100 totalTokens$/),
      data: expect.objectContaining({ limit: { totalTokens: LIMIT } }),
    });
    expect(root.model.requests).toHaveLength(2);
    await handle.approve(pending[0]!.id);
    const result = await handle.result();
    expect(result.text).toBe('done');
    const status = await handle.status();
    expect(status.treeUsage).toEqual({ totalTokens: 10 + 20 * a.model.requests.length + 10 });
  });

  it('two levels: a sub-agent of a sub-agent counts against the root', async () => {
    const leaf = spender(20);
    const mid = agent({
      script: [toolCallReply({ name: `delegate_to_${leaf.name}`, input: { task: 'deep' } }, { usage: { totalTokens: 5 } }), textReply('never')],
      use: [agents({ agents: [leaf.name] })],
    });
    const root = agent({
      script: [toolCallReply({ name: `delegate_to_${mid.name}`, input: { task: 'mid' } }, { usage: { totalTokens: 5 } }), textReply('never')],
      use: [budget({ limit: { totalTokens: LIMIT } }), agents({ agents: [mid.name] })],
    });
    const handle = await worker().client.start(root.name, 'go');
    expect(await handle.result().then(() => undefined, runErrorOf)).toMatchObject({ status: 'ABORTED' });
    const status = await handle.status();
    expect(status.treeUsage).toEqual({ totalTokens: 10 + 20 * leaf.model.requests.length });
    // one run below calls at a time: nothing but the crossing call itself goes past the limit
    expect(status.treeUsage!.totalTokens).toBeLessThan(LIMIT + 20);
    expect([root.model.requests.length, mid.model.requests.length]).toEqual([1, 1]);
  });

  it("a session sub-agent's turn counts against the root as it spends", async () => {
    const sub = spender(20, { session: 'server' });
    const root = agent({
      script: [toolCallReply({ name: `delegate_to_${sub.name}`, input: { task: 'go' } }, { usage: { totalTokens: 10 } }), textReply('never')],
      use: [budget({ limit: { totalTokens: LIMIT } }), agents({ agents: [sub.name] })],
    });
    const handle = await worker().client.start(root.name, 'go');
    expect(await handle.result().then(() => undefined, runErrorOf)).toMatchObject({ status: 'ABORTED' });
    const status = await handle.status();
    expect(status.treeUsage).toEqual({ totalTokens: 10 + 20 * sub.model.requests.length });
    expect(status.treeUsage!.totalTokens).toBeLessThan(LIMIT + 20);
  });

  it('refuses a forged usage report that would lower the count (sent with the temporal CLI while the run waits)', async ({ expect }) => {
    // call 1 spends the whole limit and asks for a tool that waits until the forged reports are in;
    // the check before call 2 must still stop the run
    const { gate, waiting, release } = gateTool('gate');
    const model = scriptedModel({
      name: `scripted/tree-forged-${++count}`,
      script: [toolCallReply({ name: 'gate', input: {} }, { usage: { totalTokens: LIMIT } }), textReply('never')],
    });
    const name = `tree-forged-${count}`;
    registry.add(gate, model, defineAgent({ name, model: model.name, tools: [gate], use: [budget({ limit: { totalTokens: LIMIT } })] }));
    const handle = await worker().client.start(name, 'go');
    await waiting;
    await signalWithCli(handle.runId, '__keel_internal_treeUsage', JSON.stringify({ from: 'attacker', usage: { totalTokens: -1000 } }));
    await signalWithCli(handle.runId, '__keel_internal_treeUsage', JSON.stringify({ from: 'attacker', usage: { custom: { cost: -5 } } }));
    await signalWithCli(handle.runId, '__keel_internal_treeUsage', JSON.stringify({ usage: 'lots' }));
    // Counts keel could not add exactly: alone, or with what the ledger holds.
    await signalWithCli(handle.runId, '__keel_internal_treeUsage', JSON.stringify({ from: 'attacker', usage: { cost: 1e300 } }));
    await signalWithCli(handle.runId, '__keel_internal_treeUsage', JSON.stringify({ from: 'attacker', usage: { totalTokens: Number.MAX_SAFE_INTEGER } }));
    await expect.poll(async () => (await handle.status()).refusedSignals?.length ?? 0, { timeout: 20_000, interval: 100 }).toBe(5);
    release();
    expect(await handle.result().then(() => undefined, runErrorOf)).toMatchObject({ status: 'ABORTED', message: 'budget: used 100 of 100 totalTokens' });
    const status = await handle.status();
    expect(status.treeUsage).toEqual({ totalTokens: LIMIT });
    expect(status.refusedSignals!.map((refused) => refused.signal)).toEqual(['treeUsage', 'treeUsage', 'treeUsage', 'treeUsage', 'treeUsage']);
    expect(status.refusedSignals!.map((refused) => refused.reason)).toEqual([
      'run "attacker" reported usage keel cannot count: usage.totalTokens: must not be negative (got -1000)',
      'run "attacker" reported usage keel cannot count: usage.custom.cost: must not be negative (got -5)',
      expect.stringContaining('not a usage report: from:'),
      expect.stringContaining('run "attacker" reported usage keel cannot count: usage.cost: must be at most'),
      expect.stringContaining(`adding the usage run "attacker" told would take usage.totalTokens to ${Number.MAX_SAFE_INTEGER + LIMIT}`),
    ]);
    expect(model.requests).toHaveLength(1);
  });
  it('a run without a Budget keeps no ledger: a forged usage report shows nowhere, and a Budget that names it as its ledger counts on its own', async () => {
    // the plain run waits in its gate tool while it is sent a forged report and named as a ledger;
    // the run naming it spends 60 a call and must stop after its second call, as a Budget without a ledger does
    const { gate, waiting, release } = gateTool(`gate-${++count}`);
    const model = scriptedModel({ name: `scripted/tree-plain-${count}`, script: [toolCallReply({ name: gate.name, input: {} }), textReply('done')] });
    const name = `tree-plain-${count}`;
    registry.add(gate, model, defineAgent({ name, model: model.name, tools: [gate] }));
    const plain = await worker().client.start(name, 'go');
    await waiting;
    await signalWithCli(plain.runId, '__keel_internal_treeUsage', JSON.stringify({ from: 'attacker', usage: { totalTokens: 5 } }));
    const member = agent({
      script: () => toolCallReply({ name: 'echo', input: { v: 'more' } }, { usage: { totalTokens: 60 } }),
      use: [budget({ limit: { totalTokens: LIMIT }, ledger: { runId: plain.runId, stage: 0 } })],
    });
    const handle = await worker().client.start(member.name, 'go');
    expect(await handle.result().then(() => undefined, runErrorOf)).toMatchObject({ status: 'ABORTED', message: 'budget: used 120 of 100 totalTokens' });
    expect(member.model.requests).toHaveLength(2);
    release();
    await plain.result();
    const status = await plain.status();
    expect(status.treeUsage).toBeUndefined();
    expect(status.refusedSignals).toBeUndefined();
  });
});
