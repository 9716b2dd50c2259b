/**
 * The benchmark's baseline: a plain workflow that schedules the same activities as an
 * N-turn keel run (one model-like and one tool-like activity per turn, then a final
 * model-like one), with none of keel's loop around them. Deterministic workflow code.
 */
import { proxyActivities } from '@temporalio/workflow';

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
