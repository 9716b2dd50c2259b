/**
 * Composes per-stage hooks so that the middleware listed first is the outermost, and routes
 * a restart of a held tool call through the wrapTool chain: stages outside the one that
 * raised the hold see it `released` (unless the input was replaced), the raising stage alone
 * gets the decision's payload as `resumed`, and the stages inside it see a fresh call.
 * Pure: runs in the workflow.
 */
import type { MiddlewareHooks, Next, ToolCallParams } from './types';

type Stage = 'wrapGenerate' | 'wrapModel';
type StageParams<S extends Stage> = Parameters<NonNullable<MiddlewareHooks[S]>>[0];
type StageResult<S extends Stage> = Awaited<ReturnType<NonNullable<MiddlewareHooks[S]>>>;

/** Wraps `inner` in the `stage` hooks of `hooks`, hooks[0] outermost. */
export function composeStage<S extends Stage>(
  hooks: readonly MiddlewareHooks[],
  stage: S,
  inner: Next<StageParams<S>, StageResult<S>>,
): Next<StageParams<S>, StageResult<S>> {
  let next = inner;
  for (let index = hooks.length - 1; index >= 0; index--) {
    const wrap = hooks[index]?.[stage] as ((params: StageParams<S>, next: Next<StageParams<S>, StageResult<S>>) => Promise<StageResult<S>>) | undefined;
    if (!wrap) continue;
    const inside = next;
    next = (params) => wrap(params, inside);
  }
  return next;
}

/** A restart of a held call, headed for the stage that raised the hold. */
export interface ToolRestart {
  /**
   * Position of the raising stage (hooks.length for the tool itself), or `every` for a hold
   * that recorded no stage (written before stages were recorded): then every stage reads
   * the payload and none counts as having let the call through.
   */
  stage: number | 'every';
  /** What the raising stage receives as `resumed` (parsed by its hold's kind); with `every`, the payload as sent. */
  payload: unknown;
  /** With `every`: what the stage at each position receives (its own kind parses the payload). */
  payloadFor?: (index: number) => unknown;
  /** True when the restart replaced the call's input: no stage counts as having let it through. */
  inputReplaced: boolean;
}

/** One tool call entering the chain. */
export type ToolCall = Omit<ToolCallParams, 'resumed' | 'released'>;

/** The innermost stage: runs the tool, with the payload when the restart is for the tool's own hold. */
export type ToolRunner = (call: ToolCall, resumed: unknown) => Promise<unknown>;

/** Wraps `runTool` in the wrapTool hooks, hooks[0] outermost, routing restarts by position. */
export function composeToolChain(hooks: readonly MiddlewareHooks[], runTool: ToolRunner): (call: ToolCall, restart?: ToolRestart) => Promise<unknown> {
  const at = (index: number, call: ToolCall, restart: ToolRestart | undefined): Promise<unknown> => {
    const readsPayload = restart !== undefined && (restart.stage === index || restart.stage === 'every');
    const payload = readsPayload ? (restart.stage === 'every' && restart.payloadFor ? restart.payloadFor(index) : restart.payload) : undefined;
    if (index === hooks.length) return runTool(call, payload);
    const wrap = hooks[index]!.wrapTool;
    // Past the raising stage the call is fresh: the restart is not passed further in.
    const inward = restart && (restart.stage === 'every' || restart.stage > index) ? restart : undefined;
    if (!wrap) return at(index + 1, call, inward);
    const params: ToolCallParams = {
      ...call,
      ...(readsPayload ? { resumed: payload } : {}),
      ...(inward && inward.stage !== 'every' && !inward.inputReplaced ? { released: true } : {}),
    };
    return wrap(params, (next) => {
      const { resumed: _resumed, released: _released, ...forward } = next;
      return at(index + 1, forward, inward);
    });
  };
  return (call, restart) => at(0, call, restart);
}
