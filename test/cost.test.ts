/**
 * Cost: a priced model's calls carry `usage.cost` (USD) summed per run and tree; a tool reports
 * what it spent with `ctx.reportUsage`, counted in the same usage; Budget caps `cost` and stops
 * a run that model calls or tool spend took over it. Real runs on a real server.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runErrorOf } from '../src/client/keel-client';
import { defineAgent, defineTool } from '../src/define';
import { agents } from '../src/features/agents/agents';
import { budget } from '../src/features/budget/budget';
import { softToolErrors } from '../src/features/soft-tool-errors/soft-tool-errors';
import { scriptedModel, textReply, toolCallReply, type ScriptedReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { ScriptedReplySchema } from '../src/core/scripted-reply';
import { SOFT_TOOL_ERRORS_HINT } from '../src/workflows/run-status';
import { modelFromConfig } from '../src/worker/load-registry';
import { echo } from './fixtures/tools';
import { MAX_USAGE_COST } from '../src/core/usage';
import { sharedTestWorker } from './support/harness';

const registry = new Registry();
const worker = sharedTestWorker(registry);

/** $2 per million input tokens, $10 per million output, $0.5 per million cached input. */
const price = { inputPerMTok: 2, outputPerMTok: 10, cachedInputPerMTok: 0.5 };
/** Costs 600 × 2 + 400 × 0.5 + 150 × 10 = 2,900 micro-dollars: $0.0029. */
const usage = { inputTokens: 1000, cachedContentTokens: 400, outputTokens: 100, thoughtsTokens: 50 };

/** A paid search: each call costs $0.5 and reports it. */
const paidSearch = defineTool({
  name: 'paid_search',
  description: 'Searches, for a fee.',
  input: z.object({ q: z.string() }),
  async run({ q }, ctx) {
    ctx.reportUsage({ cost: 0.25 });
    ctx.reportUsage({ cost: 0.25, custom: { searches: 1 } });
    return { hits: [q] };
  },
});
const badReport = defineTool({
  name: 'bad_report',
  description: 'Reports a negative cost.',
  input: z.object({}),
  run: (_input, ctx) => {
    ctx.reportUsage({ cost: -1 });
    return {};
  },
});
/** Reports a cost of 1e300 twice: past what keel counts exactly (before, the sum read as no cost, `null` in JSON). */
const absurdFee = defineTool({
  name: 'absurd_fee',
  description: 'Charges an absurd fee.',
  input: z.object({}),
  run: (_input, ctx) => {
    ctx.reportUsage({ cost: 1e300 });
    ctx.reportUsage({ cost: 1e300 });
    return {};
  },
});
/** Charges $6M each call: two calls take the run's cost past what keel adds exactly. */
const bigFee = defineTool({
  name: 'big_fee',
  description: 'Charges a big fee.',
  input: z.object({}),
  run: (_input, ctx) => {
    ctx.reportUsage({ cost: 6_000_000 });
    return {};
  },
});
/** Counts under custom keys an object literal or a zod record would lose. */
const oddCounters = defineTool({
  name: 'odd_counters',
  description: 'Counts under odd names.',
  input: z.object({}),
  run: (_input, ctx) => {
    ctx.reportUsage({ custom: JSON.parse('{"__proto__": 1, "constructor": 2, "toString": 3}') as Record<string, number> });
    return {};
  },
});
registry.add(paidSearch, badReport, absurdFee, bigFee, oddCounters);

let count = 0;
function agent(options: { script: ScriptedReply[] | (() => ScriptedReply); priced?: boolean; use?: Parameters<typeof defineAgent>[0]['use'] }) {
  const name = `cost-${++count}`;
  const model = options.priced
    ? modelFromConfig({
        name: `scripted/${name}`,
        provider: 'scripted',
        script: (options.script as ScriptedReply[]).map((reply) => ScriptedReplySchema.parse(reply)),
        price,
      })
    : scriptedModel({ name: `scripted/${name}`, script: options.script });
  registry.add(model, defineAgent({ name, model: model.name, tools: [paidSearch, badReport, absurdFee, bigFee, oddCounters, echo], use: options.use ?? [] }));
  return name;
}

describe.concurrent('usage.cost', () => {
  it("a priced model's calls carry their cost, summed for the run (status and result)", async () => {
    const name = agent({ priced: true, script: [toolCallReply({ name: 'paid_search', input: { q: 'a' } }, { usage }), textReply('done', { usage })] });
    const handle = await worker().client.start(name, 'go');
    const result = await handle.result();
    // two model calls at $0.0029 and one search at $0.5
    expect(result.usage).toMatchObject({ inputTokens: 2000, outputTokens: 200, cost: 0.5058, custom: { searches: 1 } });
    expect((await handle.status()).usage.cost).toBe(0.5058);
  });

  it('Budget caps cost: a run whose model calls cross it stops ABORTED', async () => {
    const name = agent({
      priced: true,
      script: [1, 2, 3].map((n) => toolCallReply({ name: 'echo', input: { v: String(n) } }, { usage })),
      use: [budget({ limit: { cost: 0.005 } })],
    });
    // call 1: $0.0029, call 2: $0.0058 in all; call 3 is not made
    const error = await worker()
      .client.run(name, 'go')
      .then(() => undefined, runErrorOf);
    expect(error).toMatchObject({ status: 'ABORTED', message: 'budget: used 0.0058 of 0.005 cost' });
  });

  it("a tool's reported spend counts against a cost Budget: the run stops before the model is called over it", async () => {
    const name = agent({ script: () => toolCallReply({ name: 'paid_search', input: { q: 'again' } }), use: [budget({ limit: { cost: 1 } })] });
    const handle = await worker().client.start(name, 'go');
    const error = await handle.result().then(() => undefined, runErrorOf);
    expect(error).toMatchObject({ status: 'ABORTED', message: 'budget: used 1 of 1 cost' });
    const status = await handle.status();
    expect(status.usage).toEqual({ cost: 1, custom: { searches: 2 } });
    expect(status.turn).toBe(2);
  });

  it('a report keel cannot count fails the tool call, saying what was wrong', async () => {
    const name = agent({ script: [toolCallReply({ name: 'bad_report', input: {} }), textReply('after')] });
    const error = await worker()
      .client.run(name, 'go')
      .then(() => undefined, runErrorOf);
    expect(error).toMatchObject({
      status: 'DATA_LOSS',
      message: `tool "bad_report" reported usage keel cannot count: usage.cost: must not be negative (got -1); ${SOFT_TOOL_ERRORS_HINT}`,
    });
  });

  it('a cost keel cannot count exactly fails the call, never counted as no cost', async () => {
    const absurd = agent({ script: [toolCallReply({ name: 'absurd_fee', input: {} }), textReply('after')] });
    const handle = await worker().client.start(absurd, 'go');
    expect(await handle.result().then(() => undefined, runErrorOf)).toMatchObject({
      status: 'DATA_LOSS',
      message: `tool "absurd_fee" reported usage keel cannot count: usage.cost: must be at most ${MAX_USAGE_COST} (got 1e+300); ${SOFT_TOOL_ERRORS_HINT}`,
    });
    expect((await handle.status()).usage).toEqual({});
    // Two reports keel can each count, whose sum it cannot: the second call fails, the run's cost stays the first's.
    const big = agent({ script: [toolCallReply({ name: 'big_fee', input: {} }), toolCallReply({ name: 'big_fee', input: {} }), textReply('after')] });
    const second = await worker().client.start(big, 'go');
    const error = await second.result().then(() => undefined, runErrorOf);
    expect(error).toMatchObject({ status: 'DATA_LOSS' });
    expect(error?.message).toContain(`adding the usage tool "big_fee" reported would take usage.cost to 12000000, past ${MAX_USAGE_COST}`);
    expect((await second.status()).usage).toEqual({ cost: 6_000_000 });
    // softToolErrors answers a tool's own failures to the model; a sum the run cannot count is not one: the run still fails.
    const soft = agent({
      script: [toolCallReply({ name: 'big_fee', input: {} }), toolCallReply({ name: 'big_fee', input: {} }), textReply('after')],
      use: [softToolErrors()],
    });
    const third = await worker().client.start(soft, 'go');
    const uncounted = await third.result().then(() => undefined, runErrorOf);
    expect(uncounted).toMatchObject({ status: 'DATA_LOSS' });
    expect(uncounted?.message).not.toContain(SOFT_TOOL_ERRORS_HINT);
    expect((await third.status()).usage).toEqual({ cost: 6_000_000 });
  });

  it("custom counters named __proto__, constructor and toString count in the run's usage", async () => {
    const name = agent({
      script: [toolCallReply({ name: 'odd_counters', input: {} }), toolCallReply({ name: 'odd_counters', input: {} }), textReply('counted')],
    });
    const handle = await worker().client.start(name, 'go');
    const result = await handle.result();
    const counted = JSON.parse('{"__proto__": 2, "constructor": 4, "toString": 6}') as Record<string, number>;
    expect(Object.entries(result.usage.custom ?? {})).toEqual(Object.entries(counted));
    expect(Object.entries((await handle.status()).usage.custom ?? {})).toEqual(Object.entries(counted));
  });

  it("a sub-agent's model and tool spend count in the tree's ledger and the parent's Budget", async () => {
    const child = agent({ priced: true, script: [toolCallReply({ name: 'paid_search', input: { q: 'c' } }, { usage }), textReply('found', { usage })] });
    const root = agent({
      script: [toolCallReply({ name: `delegate_to_${child}`, input: { task: 'look' } }), textReply('all done')],
      use: [budget({ limit: { cost: 10 } }), agents({ agents: [child] })],
    });
    const handle = await worker().client.start(root, 'go');
    await handle.result();
    expect((await handle.status()).treeUsage).toMatchObject({ cost: 0.5058 });
  });
});
