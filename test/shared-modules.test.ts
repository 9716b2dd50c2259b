/**
 * The libraries a workflow thread shares between its runs (src/workflows/shared-modules.ts):
 * the bundle really preloads them, what they export is frozen before any run (zod's schemas
 * excepted, which zod writes to as they are used: src/workflows/shared-schemas.ts), and runs of
 * one thread replay side by side on the shared copy exactly as each did alone.
 */
import { Worker } from '@temporalio/worker';
import { ReusableVMWorkflowCreator } from '@temporalio/worker/lib/workflow/reusable-vm';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runInContext } from 'node:vm';
import { describe, expect, inject, it } from 'vitest';
import { sessionWorkflowId } from '../src/core/session';
import { historyFromJSON } from '../src/node/history-json';
import { SCENARIOS } from './histories/scenarios';

const dir = join(__dirname, 'histories');

/** The SDK's workflow-thread sandbox, with a way to evaluate an expression inside it. */
class Sandbox extends ReusableVMWorkflowCreator {
  evaluate(expression: string): unknown {
    return runInContext(expression, this.context);
  }
}

describe('modules shared by the runs of a workflow thread', () => {
  it('the bundle loads zod, then the workflow entry with all of keel, then readies the shared schemas, before any run, once per thread', () => {
    const code = readFileSync(inject('bundlePath'), 'utf8');
    const preload = /exports\.preloadModules = function preloadModules\(\) \{([^}]*)\}/.exec(code);
    // webpack drops a bare require of a package marked free of side effects; each module must survive as a real require.
    const required = [...(preload?.[1] ?? '').matchAll(/__webpack_require__\([^)]*?\/\*! (\S+) \*\//g)].map((match) => match[1]);
    expect(required).toEqual(['./src/workflows/shared-modules.ts', './src/workflows/index.ts', './src/workflows/shared-schemas.ts']);
  });

  it('what the shared modules export is frozen before any run, zod schemas excepted, which still parse', async () => {
    const code = readFileSync(inject('bundlePath'), 'utf8');
    const sourceMap = { version: 3, file: 'bundle.js', sources: [], names: [], mappings: '' };
    // The SDK's own sandbox, built as a worker thread builds it (an SDK internal: the SDK is pinned).
    const sandbox = await Sandbox.create({ code, filename: 'bundle.js', sourceMap }, 5_000, new Set(), () => false);
    try {
      const exported = (module: string) => `__webpack_module_cache__['./src/${module}'].exports`;
      // A table of definitions (objects of objects) and a run's schema, as any run of the thread sees them.
      expect(sandbox.evaluate(`Object.isFrozen(${exported('features/catalog.ts')}.BUILTIN_MIDDLEWARE)`)).toBe(true);
      expect(sandbox.evaluate(`Object.isFrozen(${exported('features/catalog.ts')}.BUILTIN_MIDDLEWARE.toolApproval.holds)`)).toBe(true);
      expect(sandbox.evaluate(`Object.isFrozen(${exported('core/run.ts')}.MiddlewareRefSchema)`)).toBe(false);
      expect(sandbox.evaluate(`${exported('core/run.ts')}.MiddlewareRefSchema.safeParse({ name: 'retry', config: {} }).success`)).toBe(true);
      expect(sandbox.evaluate(`${exported('core/run.ts')}.MiddlewareRefSchema.optional().safeParse(undefined).success`)).toBe(true);
    } finally {
      await sandbox.destroy();
    }
  });

  it('every recorded history replays in one worker thread, one after another on the shared zod', { timeout: 300_000 }, async () => {
    const scenarios = SCENARIOS.filter((scenario) => !scenario.testMiddleware);
    const histories = scenarios.map((scenario) => ({
      workflowId: scenario.sessionMessages ? sessionWorkflowId(scenario.agent, `replay-${scenario.name}`) : `replay-${scenario.name}`,
      history: historyFromJSON(JSON.parse(readFileSync(join(dir, `${scenario.name}.json`), 'utf8'))),
    }));
    const failures: string[] = [];
    let replayed = 0;
    for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: inject('bundlePath') } }, histories)) {
      replayed++;
      if (result.error) failures.push(`${result.workflowId}: ${String(result.error)}`);
    }
    expect(failures).toEqual([]);
    expect(replayed).toBe(histories.length);
    expect(replayed).toBeGreaterThan(20);
  });
});
