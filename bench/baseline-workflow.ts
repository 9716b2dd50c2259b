/**
 * The benchmark's baseline: a plain workflow that schedules the same activities as an
 * N-turn keel run (one model-like and one tool-like activity per turn, then a final
 * model-like one), with none of keel's loop around them. Deterministic workflow code.
 */
import { patched, proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
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

/** The patches a new keel run of the throughput bench records, by count (each one a marker and a `TemporalChangeVersion` upsert). */
const KEEL_RUN_PATCHES = 5;

/**
 * The baseline with the history a keel run has around the same activities, and none of its
 * code: one more activity first (keel's `resolveAgent`), KEEL_RUN_PATCHES patches, and the
 * `KeelAgent`/`KeelStatus` upserts at the start and the end. Between this and the baseline
 * lies what the history's shape costs the server; between this and keel, keel's own work.
 */
export async function keelShapedWorkflow(turns: number, modelMs = 0, toolMs = 0): Promise<number> {
  await bareTool(-1);
  upsertSearchAttributes([
    { key: KEEL_AGENT, value: 'keel-shaped' },
    { key: KEEL_STATUS, value: 'running' },
  ]);
  for (let patch = 0; patch < KEEL_RUN_PATCHES; patch++) patched(`bench-keel-shaped-${patch}`);
  await baselineWorkflow(turns, modelMs, toolMs);
  upsertSearchAttributes([{ key: KEEL_STATUS, value: 'completed' }]);
  return turns;
}
