/**
 * The in-memory middleware harness (keel-agents/testing) on real middleware: ToolApproval,
 * Budget and the spending gate of examples/spending-gate.ts. No server: each test runs hooks
 * in memory and takes milliseconds.
 */
import { describe, expect, it } from 'vitest';
import { defineHold } from '../core/holds';
import { defineMiddleware } from '../middleware/define-middleware';
import { filesDoor } from '../features/filesystem/files';
import { toolApproval, DENIED_MESSAGE, JUDGE_DENIED_MESSAGE } from '../features/tool-approval/tool-approval';
import { budget, BUDGET_METADATA_KEY } from '../features/budget/budget';
import { errorReply, textReply } from '../models/scripted';
import { spendingGate } from '../../examples/spending-gate';
import { z } from 'zod';
import { testMiddleware, type FakeTool } from './middleware-harness';

const userAsked = [{ role: 'user' as const, content: [{ text: 'clean up the build directory' }] }];

describe('ToolApproval in the harness', () => {
  it('runs an allow-listed tool without holding it', async () => {
    const approval = await testMiddleware(toolApproval, { allowedTools: ['search'] });
    expect(await approval.callTool({ name: 'search', input: { q: 'trains' } }, () => ['a train'])).toEqual({ output: ['a train'] });
    expect(approval.toolRuns).toEqual([{ name: 'search', input: { q: 'trains' } }]);
    expect(approval.holds).toEqual([]);
  });

  it('holds a call that is not allow-listed, as an approval hold with its question, and does not run it', async () => {
    const approval = await testMiddleware(toolApproval({ allowedTools: ['search'] }));
    const { held } = await approval.callTool({ name: 'delete_files', input: { path: 'build' } });
    expect(held).toMatchObject({
      id: 'i1',
      kind: 'approval',
      question: 'Approve delete_files?',
      data: { message: 'Tool not in approved list: delete_files' },
      raisedBy: 'toolApproval',
      toolName: 'delete_files',
      input: { path: 'build' },
      respond: 'answer',
    });
    expect(held?.decisionSchema).toMatchObject({ type: 'object', properties: { approved: { type: 'boolean' } } });
    expect(approval.toolRuns).toEqual([]);
  });

  it('runs the held call once it is approved', async () => {
    const approval = await testMiddleware(toolApproval, {});
    const first = await approval.callTool({ name: 'delete_files', input: { path: 'build' } }, () => 'deleted');
    expect(await approval.decide(first, { approved: true })).toEqual({ output: 'deleted' });
    expect(approval.toolRuns).toEqual([{ name: 'delete_files', input: { path: 'build' } }]);
  });

  it('answers the model with the denial and its reason when denied, without running the tool', async () => {
    const approval = await testMiddleware(toolApproval, {});
    const { held } = await approval.callTool({ name: 'delete_files' });
    expect(await approval.decide(held!, { approved: false, reason: 'not today' })).toEqual({ error: `${DENIED_MESSAGE}. Reason: not today` });
    expect(approval.toolRuns).toEqual([]);
    await expect(approval.decide(held!, { approved: true })).rejects.toThrow('hold i1 was already decided');
  });

  it("follows a judge model's verdict, asked through the fake callModel", async () => {
    const judged = await testMiddleware(
      toolApproval,
      { judge: 'scripted/judge' },
      { model: [textReply('allow'), textReply('Deny.'), textReply('ask')], inputMessages: userAsked },
    );
    expect(await judged.callTool({ name: 'list_files' }, () => ['build/'])).toEqual({ output: ['build/'] });
    expect(await judged.callTool({ name: 'delete_files' })).toEqual({ error: JUDGE_DENIED_MESSAGE });
    const { held } = await judged.callTool({ name: 'rename_files' });
    expect(held).toMatchObject({ kind: 'approval', question: 'Approve rename_files?', data: { judge: 'ask' } });
    // The judge saw the user's words and the call, and was asked for one word.
    expect(judged.modelCalls.map((call) => call.model)).toEqual(['scripted/judge', 'scripted/judge', 'scripted/judge']);
    const request = judged.modelCalls[0]!.request;
    expect(request.output).toEqual({ format: 'enum', enum: ['allow', 'deny', 'ask'] });
    expect(JSON.parse((request.messages[1]!.content[0] as { text: string }).text)).toEqual({
      userMessages: ['clean up the build directory'],
      toolCall: { name: 'list_files', input: {} },
    });
  });

  it('says so when a hook reaches a Temporal workflow API the harness cannot run (a failed judge is logged)', async () => {
    const judged = await testMiddleware(toolApproval, { judge: 'scripted/judge' }, { model: [errorReply('UNAVAILABLE')] });
    await expect(judged.callTool({ name: 'delete_files' })).rejects.toThrow(/a hook called a Temporal workflow API.*Workflow\.log/);
  });

  it('refuses a config as the runtime does, naming the field; an unknown middleware is NOT_FOUND', async () => {
    await expect(testMiddleware(toolApproval, { allowedTools: 'search' } as never)).rejects.toThrow(
      'invalid config for middleware "toolApproval": config.allowedTools: Invalid input: expected array, received string',
    );
    await expect(testMiddleware({ name: 'nope', config: {} })).rejects.toMatchObject({
      status: 'NOT_FOUND',
      message: /middleware "nope" \(use\[0\]\) is not registered/,
    });
  });
});

describe('Budget in the harness', () => {
  it('stops the run at the next iteration once a model call spent past the limit', async () => {
    const capped = await testMiddleware(budget, { limit: { totalTokens: 50 } }, { model: [textReply('a long answer', { usage: { totalTokens: 60 } })] });
    const first = await capped.generate();
    expect(first.response.message.metadata?.[BUDGET_METADATA_KEY]).toEqual({ spent: { totalTokens: 60 } });
    expect(capped.usage()).toEqual({ totalTokens: 60 });
    await expect(capped.generate({ iteration: 1, messages: first.messages })).rejects.toMatchObject({
      name: 'RunStoppedError',
      status: 'ABORTED',
      message: 'budget: used 60 of 50 totalTokens',
    });
    expect(capped.modelCalls).toHaveLength(1);
  });

  it('with interrupt, holds the next tool call; approval renews the budget and the call runs', async () => {
    // Turns: the model spends 60 of 50 tokens and asks for a tool (held, approved, it runs); the next model call goes ahead.
    const held = await testMiddleware(
      budget,
      { limit: { totalTokens: 50 }, interrupt: true },
      { model: [textReply('calling search', { usage: { totalTokens: 60 } }), textReply('done', { usage: { totalTokens: 10 } })] },
    );
    await held.generate();
    const call = await held.callTool({ name: 'search' }, () => 'results');
    expect(call.held).toMatchObject({
      kind: 'budget',
      question: 'Usage budget reached: used 60 of 50 totalTokens',
      data: { spent: { totalTokens: 60 }, limit: { totalTokens: 50 } },
      respond: 'decide',
    });
    expect(await held.decide(call, { approved: true })).toEqual({ output: 'results' });
    expect((await held.generate({ iteration: 1 })).response.message.content).toEqual([{ text: 'done' }]);
  });

  it('with interrupt, a refusal (or a stand-in output, which it decides itself) stops the run', async () => {
    const held = await testMiddleware(budget, { limit: { totalTokens: 50 }, interrupt: true }, { usage: { totalTokens: 70 } });
    const first = await held.callTool({ name: 'search' });
    await expect(held.decide(first, { approved: false, reason: 'enough' })).rejects.toThrow('budget: continuing past the limit was refused: enough');
    const second = await held.callTool({ name: 'search' });
    await expect(held.decide(second, { respond: 'no results' })).rejects.toThrow(/refused: the hold was answered with a tool output/);
    expect(held.toolRuns).toEqual([]);
  });

  it('reads a resumed run’s decisions as the runtime parses them', async () => {
    const resumed = await testMiddleware(budget, { limit: { totalTokens: 50 }, interrupt: true }, { resumedHolds: [{ restart: { budgetApproved: false } }] });
    await expect(resumed.generate()).rejects.toThrow('budget: continuing past the limit was refused');
  });
});

describe('spendingGate (examples/spending-gate.ts) in the harness', () => {
  const pay = { name: 'pay', input: { amount: 500 } };

  it('lets a call within its limit run, and holds one over it with its own kind, question and decision schema', async () => {
    const gate = await testMiddleware(spendingGate, { limit: 100 });
    expect(await gate.callTool({ name: 'pay', input: { amount: 20 } }, () => ({ paid: 20 }))).toEqual({ output: { paid: 20 } });
    const { held } = await gate.callTool(pay);
    expect(held).toMatchObject({ kind: 'spending', question: 'Let pay spend 500? (the limit is 100)', data: { tool: 'pay', amount: 500, limit: 100 } });
    expect(held?.decisionSchema).toMatchObject({ anyOf: [{ required: ['approved'] }, { required: ['limit'] }] });
  });

  it('holds a payment over the limit until a new limit fits', async () => {
    const gate = await testMiddleware(spendingGate, { limit: 100 });
    const first = await gate.callTool({ name: 'pay', input: { amount: 500 } }, (input) => ({ paid: (input as { amount: number }).amount }));
    expect(first.held).toMatchObject({ kind: 'spending', question: 'Let pay spend 500? (the limit is 100)' });
    await expect(gate.decide(first, { restart: { limit: 'lots' } })).rejects.toThrow(/limit: expected number/);
    expect(await gate.decide(first, { restart: { limit: 1000 } })).toEqual({ output: { paid: 500 } });
  });

  it('refuses a decision its strict schema does not take in the words of the runtime, and the hold keeps waiting', async () => {
    const gate = await testMiddleware(spendingGate, { limit: 100 });
    const first = await gate.callTool(pay, () => 'paid');
    await expect(gate.decide(first, { restart: { limit: 'lots' } })).rejects.toMatchObject({
      status: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/^the decision for hold i1 \(a spending hold on tool "pay"\) is not one it takes: .*limit: expected number/),
    });
    await expect(gate.decide(first, { approved: 'yes' } as never)).rejects.toThrow(/^malformed decision .*approved: expected boolean/);
    expect(await gate.decide(first, { approved: true })).toEqual({ output: 'paid' });
  });

  it('answers the model with an error when a new limit does not fit, or a denial', async () => {
    const gate = await testMiddleware(spendingGate, { limit: 100 });
    expect(await gate.decide(await gate.callTool(pay), { restart: { limit: 200 } })).toEqual({ error: 'spending 500 was not approved' });
    expect(await gate.decide(await gate.callTool(pay), { approved: false, reason: 'too much' })).toEqual({ error: 'spending 500 was not approved: too much' });
  });

  it("lets the tool's own question through once the gate approved the call (the gate is released)", async () => {
    // The gate holds (approved), then the tool asks its own question; its decision goes to the tool alone.
    const gate = await testMiddleware(spendingGate, { limit: 100 });
    const confirmingTool: FakeTool = (input, call) =>
      call.resumed ? { paid: (input as { amount: number }).amount, confirmed: call.resumed } : call.interrupt({ message: 'confirm the payee' });
    const gated = await gate.callTool(pay, confirmingTool);
    const asked = await gate.decide(gated, { approved: true });
    expect(asked.held).toMatchObject({ kind: 'tool', raisedBy: 'tool', question: 'confirm the payee' });
    expect(await gate.decide(asked, { restart: { payee: 'ACME' } })).toEqual({ output: { paid: 500, confirmed: { payee: 'ACME' } } });
    // A restart that replaces the input is never released: the gate checks the new amount.
    const again = await gate.decide(await gate.callTool(pay, confirmingTool), { approved: true });
    expect((await gate.decide(again, { restart: true, input: { amount: 900 } })).held).toMatchObject({ kind: 'spending', data: { amount: 900 } });
  });
});

describe('the harness context', () => {
  const reader = defineMiddleware({
    name: 'reader',
    description: 'reads a file before every tool call, and notes each model request it sees',
    configSchema: z.object({}),
    create: (_config, context) => ({
      wrapTool: async (params, next) => ({
        listed: await context.activity(filesDoor, { op: 'list', root: '.', dirPath: '.', recursive: false }),
        tool: await next(params),
      }),
      wrapModel: (params, next) => next({ ...params, request: { ...params.request, config: { temperature: 0 } } }),
    }),
  });

  it('says which option provides a capability the test did not pass', async () => {
    const bare = await testMiddleware(reader);
    await expect(bare.callTool({ name: 'search' })).rejects.toThrow(
      'context.activity(files) is not provided by the harness; pass options.activities.files to testMiddleware',
    );
    await expect(bare.callModel()).rejects.toThrow('a model call to "scripted/harness" found no replies; pass options.model to testMiddleware');
    const given = await testMiddleware(reader, {}, { activities: { files: async () => ({ kind: 'list', entries: [] }) } });
    expect(await given.callTool({ name: 'search' })).toEqual({ output: { listed: { kind: 'list', entries: [] }, tool: { ok: true } } });
    // An answer the door does not declare fails as it does on a worker.
    const forged = await testMiddleware(reader, {}, { activities: { files: async () => ({ kind: 'list', entries: 'all of them' }) } });
    await expect(forged.callTool({ name: 'search' })).rejects.toThrow('activity "files" answered what its door does not declare: entries');
  });

  it('runs one wrapModel call against the fake model, or a fake next', async () => {
    const harness = await testMiddleware(reader, {}, { model: [textReply('hi', { usage: { inputTokens: 3 } })] });
    expect((await harness.callModel()).message.content).toEqual([{ text: 'hi' }]);
    expect(harness.modelCalls[0]?.request.config).toEqual({ temperature: 0 });
    expect(harness.usage()).toEqual({ inputTokens: 3 });
    const seen = await harness.callModel({ model: 'other' }, async (params) => ({
      message: { role: 'model', content: [{ text: JSON.stringify(params.request.config) }] },
      finishReason: 'stop',
      usage: {},
    }));
    expect(seen.message.content).toEqual([{ text: '{"temperature":0}' }]);
  });

  it('decides a hold before a model call with options.holdModelCall, parsed by its kind', async () => {
    const pause = defineMiddleware({
      name: 'pause',
      description: 'asks before every model call',
      configSchema: z.object({}),
      holds: [defineHold({ kind: 'pause', question: () => 'go on?', data: z.object({}), decision: z.object({ go: z.boolean() }).strict() })],
      create: (_config, context) => ({
        wrapGenerate: async (params, next) => {
          if (!context.holdModelCall) return next(params);
          const { go } = (await context.holdModelCall({})) as { go: boolean };
          return go ? next(params) : { response: { message: { role: 'model', content: [] }, finishReason: 'aborted', usage: {} }, messages: params.messages };
        },
      }),
    });
    const asked = await testMiddleware(pause, {}, { model: [textReply('on')], holdModelCall: () => ({ restart: { go: true } }) });
    expect((await asked.generate()).response.message.content).toEqual([{ text: 'on' }]);
    expect(asked.holds).toMatchObject([{ id: 'i1', kind: 'pause', question: 'go on?', toolName: '(next model call)', input: { model: 'scripted/harness' } }]);
    const refused = await testMiddleware(pause, {}, { holdModelCall: () => ({ restart: { go: 'yes' } }) });
    await expect(refused.generate()).rejects.toThrow(/is not one it takes: go: expected boolean/);
    // A run that cannot wait (no holdModelCall option) has none.
    expect((await (await testMiddleware(pause, {}, { model: [textReply('on')] })).generate()).response.finishReason).toBe('stop');
  });
});
