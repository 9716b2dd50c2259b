import { describe, expect, it } from 'vitest';
import { composeStage } from './compose';
import type { MiddlewareHooks, ModelCallParams } from './types';
import type { ModelResponse } from '../core/messages';

const response: ModelResponse = { message: { role: 'model', content: [{ text: 'ok' }] }, finishReason: 'stop', usage: {} };
const params: ModelCallParams = { model: 'm', request: { messages: [], tools: [] }, iteration: 0 };

function tracer(name: string, log: string[]): MiddlewareHooks {
  return {
    wrapModel: async (call, next) => {
      log.push(`${name} in`);
      const result = await next(call);
      log.push(`${name} out`);
      return result;
    },
  };
}

describe('middleware order', () => {
  it('runs the middleware listed first as the outermost', async () => {
    const log: string[] = [];
    const stage = composeStage([tracer('a', log), {}, tracer('b', log)], 'wrapModel', async () => {
      log.push('model');
      return response;
    });
    await stage(params);
    expect(log).toEqual(['a in', 'b in', 'model', 'b out', 'a out']);
  });

  it('lets a hook change what inner stages see', async () => {
    const seen: string[] = [];
    const redirect: MiddlewareHooks = { wrapModel: (call, next) => next({ ...call, model: 'other' }) };
    const stage = composeStage([redirect], 'wrapModel', async (call) => {
      seen.push(call.model);
      return response;
    });
    await stage(params);
    expect(seen).toEqual(['other']);
  });

  it('calls the inner stage directly when no hook wraps it', async () => {
    const stage = composeStage([], 'wrapModel', async () => response);
    expect(await stage(params)).toBe(response);
  });
});
