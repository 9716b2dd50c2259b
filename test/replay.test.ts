/**
 * Determinism guard: the recorded histories of representative runs replay against the
 * current workflow code. A change that would break runs under way fails here.
 */
import { Worker } from '@temporalio/worker';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { sessionWorkflowId } from '../src/core/session';
import { historyFromJSON } from '../src/node/history-json';
import { workflowBundlePath } from '../src/worker/bundle';
import { SCENARIO_MIDDLEWARE_MODULES, SCENARIOS } from './histories/scenarios';

const dir = join(__dirname, 'histories');
const files = readdirSync(dir).filter((file) => file.endsWith('.json'));

describe('replay of recorded histories', () => {
  it('has a recorded history for every scenario', () => {
    expect(files.sort()).toEqual(SCENARIOS.map((scenario) => `${scenario.name}.json`).sort());
  });

  it('records no patch marker and no TemporalChangeVersion write in any run (keel 0.x baseline: docs/deploys.md)', () => {
    for (const file of files) {
      const history = historyFromJSON(JSON.parse(readFileSync(join(dir, file), 'utf8')));
      const patches = (history.events ?? []).filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_patch');
      const versionWrites = (history.events ?? []).filter(
        (event) => event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.TemporalChangeVersion !== undefined,
      );
      expect({ file, patches: patches.length, versionWrites: versionWrites.length }).toEqual({ file, patches: 0, versionWrites: 0 });
    }
  });

  for (const file of files) {
    it(`replays ${file} without nondeterminism`, { timeout: 120_000 }, async () => {
      const history = historyFromJSON(JSON.parse(readFileSync(join(dir, file), 'utf8')));
      const scenario = SCENARIOS.find((candidate) => `${candidate.name}.json` === file);
      const workflowId = scenario?.sessionMessages ? sessionWorkflowId(scenario.agent, `replay-${scenario.name}`) : `replay-${file.replace(/\.json$/, '')}`;
      // A scenario using the suite's own middleware replays on a bundle that has it, as its worker had.
      const codePath = scenario?.testMiddleware ? await workflowBundlePath({ middlewareModules: SCENARIO_MIDDLEWARE_MODULES }) : inject('bundlePath');
      await Worker.runReplayHistory({ workflowBundle: { codePath } }, history, workflowId);
    });
  }
});
