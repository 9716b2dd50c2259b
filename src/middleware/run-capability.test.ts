import { describe, expect, it } from 'vitest';
import { testMiddleware } from '../testing/middleware-harness';
import { defineCapability, provide, runCapabilities } from './run-capability';
// The keys as a middleware author gets them: from keel-agents/middleware.
import {
  backgroundTasks,
  defineMiddleware,
  runArtifacts,
  subAgentRuns,
  treeLedger,
  type AgentRunner,
  type AgentRunOutcome,
  type RunCapability,
} from '../features/index';
import { z } from 'zod';

describe('run capabilities', () => {
  it('builds a capability the first time it is asked for, once for the run, and never one nobody asks for', () => {
    const built: string[] = [];
    const counter = defineCapability<{ count: number }>('counter');
    const unused = defineCapability<{ count: number }>('unused');
    const capability = runCapabilities([
      provide(counter, () => (built.push('counter'), { count: 0 })),
      provide(unused, () => (built.push('unused'), { count: 0 })),
    ]);
    expect(built).toEqual([]);
    capability(counter).count += 1;
    capability(counter).count += 1;
    expect(capability(counter).count).toBe(2);
    expect(built).toEqual(['counter']);
  });

  it('refuses a key the run provides nothing for, naming it', () => {
    const capability = runCapabilities([]);
    expect(() => capability(defineCapability<number>('ghost'))).toThrow('this run provides no capability "ghost"');
  });

  it("keeps each run's capabilities to itself", () => {
    const counter = defineCapability<{ count: number }>('counter');
    const [first, second] = [0, 1].map(() => runCapabilities([provide(counter, () => ({ count: 0 }))]));
    first!(counter).count += 1;
    expect(second!(counter).count).toBe(0);
  });

  it('in the harness: the artifacts are the ones the harness shows, and a capability the test did not pass fails naming its option', async () => {
    const probe = defineMiddleware({
      name: 'probe',
      description: 'reaches the run capabilities',
      configSchema: z.object({}),
      create(_config, context) {
        context.capability(runArtifacts).put({ name: 'note', parts: [{ text: 'hi' }] });
        return {
          wrapTool: async () => {
            expect(context.capability(treeLedger).enabled).toBe(false);
            return context.capability(backgroundTasks).start({ agent: 'a', messages: [] });
          },
        };
      },
    });
    const harness = await testMiddleware(probe, {});
    expect(harness.artifacts.get('note')).toEqual({ name: 'note', parts: [{ text: 'hi' }] });
    await expect(harness.callTool({ name: 'any' })).rejects.toThrow(
      'context.capability(backgroundTasks.start) is not provided by the harness; pass options.tasks to testMiddleware',
    );
  });

  it('a middleware written against keel-agents/middleware delegates through its exported key, typed by it', async () => {
    // A third-party "second opinion" middleware: its tool asks a reviewer agent through the run's sub-agent runs.
    const reviewers: RunCapability<AgentRunner> = subAgentRuns;
    const secondOpinion = defineMiddleware({
      name: 'second-opinion',
      description: 'asks a reviewer agent about a draft',
      configSchema: z.object({ reviewer: z.string() }),
      create({ reviewer }, context) {
        return {
          tools: [
            {
              definition: { name: 'ask_reviewer', description: 'asks the reviewer', inputSchema: { type: 'object' } },
              run: async (input) => {
                const outcome = await context.capability(reviewers)({
                  agent: reviewer,
                  messages: [{ role: 'user', content: [{ text: (input as { draft: string }).draft }] }],
                });
                return 'result' in outcome ? { reviewer: outcome.runId, says: outcome.result.text } : { failed: outcome.error.message };
              },
            },
          ],
        };
      },
    });
    const asked: string[] = [];
    const harness = await testMiddleware(
      secondOpinion,
      { reviewer: 'critic' },
      {
        runAgent: async ({ agent, messages }): Promise<AgentRunOutcome> => {
          asked.push(`${agent}: ${JSON.stringify(messages[0]?.content)}`);
          return {
            runId: 'harness-run/critic-1',
            result: { text: 'looks fine', finishReason: 'stop', messages: [], usage: {}, turns: 1, artifacts: [], tasks: [], interrupts: [], decisions: [] },
          };
        },
      },
    );
    expect(await harness.callTool({ name: 'ask_reviewer', input: { draft: 'v1' } })).toEqual({
      output: { reviewer: 'harness-run/critic-1', says: 'looks fine' },
    });
    expect(asked).toEqual(['critic: [{"text":"v1"}]']);
  });
});
