/**
 * The benchmark's baseline: a plain workflow that schedules the same activities as an
 * N-turn keel run (one model-like and one tool-like activity per turn, then a final
 * model-like one), with none of keel's loop around them. Deterministic workflow code.
 */
import { condition, defineSignal, proxyActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import { KEEL_AGENT, KEEL_STATUS } from '../src/core/search-attributes';

/** Activities of the baseline: as cheap as possible. */
export interface BaselineActivities {
  bareModel(turn: number, ms?: number): Promise<{ turn: number }>;
  bareTool(turn: number, ms?: number): Promise<{ ok: boolean }>;
}

const { bareModel, bareTool } = proxyActivities<BaselineActivities>({ startToCloseTimeout: '1 minute' });

/**
 * N turns of model then tool activity (`toolsPerTurn` tool activities at once), then one
 * last model activity; each model activity takes `modelMs`, each tool `toolMs`.
 */
export async function baselineWorkflow(turns: number, modelMs = 0, toolMs = 0, toolsPerTurn = 1): Promise<number> {
  for (let turn = 0; turn < turns; turn++) {
    await bareModel(turn, modelMs);
    await Promise.all(Array.from({ length: toolsPerTurn }, () => bareTool(turn, toolMs)));
  }
  await bareModel(turns, modelMs);
  return turns;
}

/**
 * The baseline with the history a keel run has around the same activities, and none of its
 * code: one more activity first (keel's `resolveAgent`) and the `KeelAgent`/`KeelStatus`
 * upserts at the start and the end (a new keel run records no patch marker). Between this and
 * the baseline lies what the history's shape costs the server; between this and keel, keel's
 * own work.
 */
export async function keelShapedWorkflow(turns: number, modelMs = 0, toolMs = 0): Promise<number> {
  await bareTool(-1);
  upsertSearchAttributes([
    { key: KEEL_AGENT, value: 'keel-shaped' },
    { key: KEEL_STATUS, value: 'running' },
  ]);
  await baselineWorkflow(turns, modelMs, toolMs);
  upsertSearchAttributes([{ key: KEEL_STATUS, value: 'completed' }]);
  return turns;
}

/** The decision a bare waiting run waits for (bench/cached-memory.ts sends it). */
export const bareDecision = defineSignal('bareDecision');

/**
 * A bare workflow shaped like a keel run held by ToolApproval: a model-like activity, then
 * `KeelStatus` waiting and a wait for a signal, then the tool-like and a last model-like
 * activity. What one such run holds in a worker's cache is the bare side of keel's memory per
 * cached run.
 */
export async function bareWaitingWorkflow(): Promise<number> {
  let decided = false;
  setHandler(bareDecision, () => void (decided = true));
  await bareModel(0);
  upsertSearchAttributes([
    { key: KEEL_AGENT, value: 'bare-waiting' },
    { key: KEEL_STATUS, value: 'waiting' },
  ]);
  await condition(() => decided);
  upsertSearchAttributes([{ key: KEEL_STATUS, value: 'running' }]);
  await bareTool(0);
  await bareModel(1);
  return 1;
}
