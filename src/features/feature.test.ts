import { describe, expect, it } from 'vitest';
import { FEATURES } from './catalog';
import { featureRuns, restoreSlots, type RunVerbs } from './feature';

const verbs: RunVerbs = {
  runId: 'r',
  addUsage: () => undefined,
  expectReports: () => undefined,
  refuseSignal: () => undefined,
  inherited: () => [],
  forgetChild: () => undefined,
  spec: () => undefined,
};

/** A run's slots, fresh, and its features' parts over them. */
function freshRun() {
  const slots: Record<string, unknown> = {};
  const parts = featureRuns(FEATURES, verbs, slots);
  return { slots, parts };
}

describe('feature slots', () => {
  it('gives each feature with state a fresh slot of its schema, and shows what it adds to the status', () => {
    const { slots, parts } = freshRun();
    expect(slots).toEqual({
      agents: { children: 0, tasks: [], aborting: [], countedTasks: [], vouchedTasks: {} },
      budget: { ledgerUntold: {}, ledgerReports: 0 },
    });
    expect(parts.status()).toEqual({ tasks: [] });
  });

  it('takes back the slots a run carried into the same objects the parts hold', () => {
    const { slots, parts } = freshRun();
    const agents = slots.agents;
    const task = { taskId: 't', agent: 'a', runId: 'r/a-1' };
    restoreSlots(FEATURES, slots, { features: { agents: { children: 1, tasks: [task] }, budget: { treeUsage: { totalTokens: 9 }, ledgerReports: 2 } } });
    expect(slots.agents).toBe(agents);
    expect(slots.agents).toMatchObject({ children: 1, tasks: [task], aborting: [] });
    expect(parts.status()).toEqual({ tasks: [task], treeUsage: { totalTokens: 9 } });
  });

  it('reads a state carried before slots: its fields at the top, the tree usage in the status', () => {
    const { slots } = freshRun();
    restoreSlots(FEATURES, slots, {
      status: { state: 'running', treeUsage: { totalTokens: 45 } },
      children: 3,
      countedTasks: ['r/a-2'],
      vouchedTasks: { 'x p': true },
      ledgerReports: 4,
      ledgerUntold: { root: { totalTokens: 1 } },
    });
    expect(slots.agents).toEqual({ children: 3, tasks: [], aborting: [], countedTasks: ['r/a-2'], vouchedTasks: { 'x p': true } });
    expect(slots.budget).toEqual({ treeUsage: { totalTokens: 45 }, ledgerReports: 4, ledgerUntold: { root: { totalTokens: 1 } } });
  });
});
