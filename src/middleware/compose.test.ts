import { describe, expect, it } from 'vitest';
import { composeStage, composeToolChain } from './compose';
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

describe('restart routing in the wrapTool chain', () => {
  /** A hook that records what it saw of each call and lets it through. */
  const recorder = (name: string, seen: string[]): MiddlewareHooks => ({
    wrapTool: async (params, next) => {
      seen.push(`${name}:${params.resumed !== undefined ? `resumed=${JSON.stringify(params.resumed)}` : params.released ? 'released' : 'fresh'}`);
      return next({ ...params, resumed: { leaked: true }, released: true });
    },
  });
  const call = { request: { name: 't', ref: '0', input: {} }, tool: { name: 't', description: '', inputSchema: {} }, iteration: 0, requestMessages: [] };

  it('releases the stages outside the raising one, hands it the payload, and shows the stages inside a fresh call', async () => {
    const seen: string[] = [];
    let toolResumed: unknown = 'unset';
    const chain = composeToolChain([recorder('a', seen), recorder('b', seen), recorder('c', seen)], async (_call, resumed) => {
      toolResumed = resumed;
      return 'ok';
    });
    expect(await chain(call, { stage: 1, payload: { approved: true }, inputReplaced: false })).toBe('ok');
    expect(seen).toEqual(['a:released', 'b:resumed={"approved":true}', 'c:fresh']);
    expect(toolResumed).toBeUndefined();
  });

  it('hands the tool its payload when the tool raised the hold', async () => {
    const seen: string[] = [];
    let toolResumed: unknown;
    const chain = composeToolChain([recorder('a', seen)], async (_call, resumed) => ((toolResumed = resumed), 'ok'));
    await chain(call, { stage: 1, payload: true, inputReplaced: false });
    expect(seen).toEqual(['a:released']);
    expect(toolResumed).toBe(true);
  });

  it('releases no stage when the restart replaced the input', async () => {
    const seen: string[] = [];
    const chain = composeToolChain([recorder('a', seen), recorder('b', seen)], async () => 'ok');
    await chain(call, { stage: 2, payload: true, inputReplaced: true });
    expect(seen).toEqual(['a:fresh', 'b:fresh']);
  });
});
