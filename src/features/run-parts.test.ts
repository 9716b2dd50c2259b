import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { testMiddleware } from '../testing/middleware-harness';
import { instantiateMiddleware } from '../middleware/stages';
import type { SharedMiddlewareContext } from '../middleware/stages';
import { agents, budget, defineMiddleware } from './index';
import { once } from './feature';
import { artifactStore } from '../core/artifacts';

/** A middleware that notes the third argument its create got. */
const noting = (name: string, seen: unknown[]) =>
  defineMiddleware({
    name,
    description: 'notes what its run lent it',
    configSchema: z.object({}),
    create: (_config, _context, part?: unknown) => {
      seen.push(part);
      return {};
    },
  });

describe("a built-in's part of its run", () => {
  it('is lent to the middleware of its name where it is created, and to no other', async () => {
    const seen: unknown[] = [];
    const catalog = { lent: noting('lent', seen).definition, other: noting('other', seen).definition };
    const part = { tasks: 'the run’s task control' };
    const context = {
      artifacts: artifactStore({ artifacts: [] }),
      carried: () => undefined,
      resumedHolds: () => [],
    } as unknown as SharedMiddlewareContext;
    await instantiateMiddleware(
      [
        { name: 'other', config: {} },
        { name: 'lent', config: {} },
        { name: 'lent', config: {} },
      ],
      context,
      catalog,
      new Map([['lent', part]]),
    );
    expect(seen).toEqual([undefined, part, part]);
  });

  it('builds what it lends the first time it is used, once for the run', () => {
    let built = 0;
    const lazy = once(() => ({ count: ++built }));
    expect(built).toBe(0);
    expect(lazy()).toBe(lazy());
    expect(built).toBe(1);
  });

  it('in the harness: the artifacts are the context’s, Agents says a delegation needs a run, a Budget of a tenant needs a run', async () => {
    const writer = defineMiddleware({
      name: 'writer',
      description: 'puts an artifact',
      configSchema: z.object({}),
      create(_config, context) {
        context.artifacts.put({ name: 'note', parts: [{ text: 'hi' }] });
        return {};
      },
    });
    expect((await testMiddleware(writer)).artifacts.get('note')).toEqual({ name: 'note', parts: [{ text: 'hi' }] });

    const delegating = await testMiddleware(
      agents,
      { agents: ['critic'] },
      { agent: { directory: [{ name: 'critic', description: 'reviews', session: 'client' }] } },
    );
    await expect(delegating.callTool({ name: 'delegate_to_critic', input: { task: 'review' } })).rejects.toThrow(
      'agents: a sub-agent runs in a run of its own (a child workflow); test delegation in a run, with a worker (docs/testing.md)',
    );

    // (src/testing/middleware-harness.test.ts holds a run-scoped Budget counting its own run in the harness.)
    await expect(testMiddleware(budget, { limit: { totalTokens: 50 }, scope: 'tenant' }, { principal: { tenant: 'acme' } })).rejects.toThrow(
      "budget: scope tenant counts in the ledger of the run's tenant, which only a run has",
    );
  });
});
