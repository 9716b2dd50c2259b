/**
 * Composes per-stage hooks so that the middleware listed first is the outermost.
 * Pure: runs in the workflow.
 */
import type { MiddlewareHooks, Next } from './types';

type Stage = 'wrapGenerate' | 'wrapModel' | 'wrapTool';
type StageParams<S extends Stage> = Parameters<NonNullable<MiddlewareHooks[S]>>[0];
type StageResult<S extends Stage> = Awaited<ReturnType<NonNullable<MiddlewareHooks[S]>>>;

/**
 * Wraps `inner` in the `stage` hooks of `hooks`, hooks[0] outermost.
 */
export function composeStage<S extends Stage>(
  hooks: readonly MiddlewareHooks[],
  stage: S,
  inner: Next<StageParams<S>, StageResult<S>>,
): Next<StageParams<S>, StageResult<S>> {
  let next = inner;
  for (let index = hooks.length - 1; index >= 0; index--) {
    const wrap = hooks[index]?.[stage] as
      | ((params: StageParams<S>, next: Next<StageParams<S>, StageResult<S>>) => Promise<StageResult<S>>)
      | undefined;
    if (!wrap) continue;
    const inside = next;
    next = (params) => wrap(params, inside);
  }
  return next;
}
