/**
 * The libraries a workflow thread shares between its runs (src/workflows/shared-modules.ts):
 * the bundle really preloads them, and runs of one thread replay side by side on the shared,
 * frozen copy exactly as each did alone.
 */
import { Worker } from '@temporalio/worker';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { sessionWorkflowId } from '../src/core/session';
import { historyFromJSON } from '../src/node/history-json';
import { SCENARIOS } from './histories/scenarios';

const dir = join(__dirname, 'histories');

describe('modules shared by the runs of a workflow thread', () => {
  it('the bundle loads zod, then the workflow entry with all of keel, then readies the shared schemas, before any run, once per thread', () => {
    const code = readFileSync(inject('bundlePath'), 'utf8');
    const preload = /exports\.preloadModules = function preloadModules\(\) \{([^}]*)\}/.exec(code);
    // webpack drops a bare require of a package marked free of side effects; each module must survive as a real require.
    const required = [...(preload?.[1] ?? '').matchAll(/__webpack_require__\([^)]*?\/\*! (\S+) \*\//g)].map((match) => match[1]);
    expect(required).toEqual(['./src/workflows/shared-modules.ts', './src/workflows/index.ts', './src/workflows/shared-schemas.ts']);
  });

  it('every recorded history replays in one worker thread, one after another on the shared zod', { timeout: 300_000 }, async () => {
    const scenarios = SCENARIOS.filter((scenario) => !scenario.testMiddleware);
    const histories = scenarios.map((scenario) => ({
      workflowId: scenario.turns ? sessionWorkflowId(scenario.agent, `replay-${scenario.name}`) : `replay-${scenario.name}`,
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
