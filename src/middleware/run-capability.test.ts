import { describe, expect, it } from 'vitest';
import { testMiddleware } from '../testing/middleware-harness';
import { defineMiddleware } from './define-middleware';
import { backgroundTasks, defineCapability, provide, runArtifacts, runCapabilities, treeLedger } from './run-capability';
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
});
