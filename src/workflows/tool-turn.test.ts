import { CancelledFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { KeelError, ToolFailure } from '../core/errors';
import type { Message, ToolRequestPart } from '../core/messages';
import { softToolErrors } from '../features/soft-tool-errors/soft-tool-errors';
import type { MiddlewareContext, MiddlewareHooks } from '../middleware/types';
import type { HoldBoard } from './hold-board';
import { settleTurn, type ToolTurnContext } from './tool-turn';

const context = {} as MiddlewareContext;
const cover = (tools: string[]): MiddlewareHooks => softToolErrors.definition.create({ tools }, context) as MiddlewareHooks;

/** A turn context whose tool-error policy is that of `hooks` (as the loop builds it). */
function turnWith(hooks: MiddlewareHooks[], stopped: unknown[] = []): ToolTurnContext {
  const board = { stopWaiting: (error: unknown) => stopped.push(error), waitAgain: () => undefined } as unknown as HoldBoard;
  return { coversToolError: (name) => hooks.some((hook) => hook.coversToolError?.(name)), board } as ToolTurnContext;
}

const call: ToolRequestPart = { toolRequest: { name: 'search', ref: '0', input: {} } };
const modelMessage: Message = { role: 'model', content: [call] };
const upstream = new ToolFailure({
  status: 'INTERNAL',
  message: 'tool "search" failed: upstream timeout',
  toolName: 'search',
  modelMessage: 'upstream timeout',
});

/** Settles a one-call turn whose call failed with `error`. */
const settleFailed = (hooks: MiddlewareHooks[], error: Error, stopped: unknown[] = []) =>
  settleTurn(turnWith(hooks, stopped), { modelMessage, requests: [call], calls: [Promise.reject(error)] });

describe('tool-error policy (softToolErrors)', () => {
  it("answers a covered failure with the tool's own words, flagged as a tool error", async () => {
    for (const hooks of [[cover([])], [cover(['search'])]]) {
      expect(await settleFailed(hooks, upstream)).toEqual({
        toolMessage: {
          role: 'tool',
          content: [{ toolResponse: { name: 'search', ref: '0', output: { error: 'upstream timeout' } }, metadata: { toolError: true } }],
        },
      });
    }
  });

  it('fails the turn with the error when no middleware covers the tool', async () => {
    await expect(settleFailed([cover(['fetch'])], upstream)).rejects.toBe(upstream);
    await expect(settleFailed([], upstream)).rejects.toBe(upstream);
  });

  it('never covers an error a hook raised in place of the tool, or a cancellation', async () => {
    const raisedByHook = new KeelError('PERMISSION_DENIED', 'blocked by policy', { toolName: 'search' });
    await expect(settleFailed([cover([])], raisedByHook)).rejects.toBe(raisedByHook);
    const cancelled = new CancelledFailure('cancelled');
    await expect(settleFailed([cover([])], cancelled)).rejects.toBe(cancelled);
  });

  it('combines instances: a failure is covered when any instance covers it', async () => {
    await expect(settleFailed([cover(['fetch'])], upstream)).rejects.toBe(upstream);
    expect(await settleFailed([cover(['fetch']), cover(['search'])], upstream)).toHaveProperty('toolMessage');
  });

  it('lets every call of the turn finish, then fails with the first failure in request order', async () => {
    const second: ToolRequestPart = { toolRequest: { name: 'fetch', ref: '1', input: {} } };
    const first = new KeelError('INTERNAL', 'first');
    let finished = false;
    const slow = new Promise<{ output: unknown }>((resolve) => setTimeout(() => ((finished = true), resolve({ output: 1 })), 20));
    await expect(
      settleTurn(turnWith([]), { modelMessage: { role: 'model', content: [call, second] }, requests: [call, second], calls: [Promise.reject(first), slow] }),
    ).rejects.toBe(first);
    expect(finished).toBe(true);
  });

  it("ends the waits of the turn's holds on a failure that ends the run, not on one it answers", async () => {
    const stopped: unknown[] = [];
    await expect(settleFailed([], upstream, stopped)).rejects.toBe(upstream);
    expect(stopped).toEqual([upstream]);
    const none: unknown[] = [];
    await settleFailed([cover([])], upstream, none);
    expect(none).toEqual([]);
  });

  it('reports a cancellation before a failure that came earlier in request order', async () => {
    const second: ToolRequestPart = { toolRequest: { name: 'fetch', ref: '1', input: {} } };
    const cancelled = new CancelledFailure('cancelled');
    const outcome = settleTurn(turnWith([]), {
      modelMessage: { role: 'model', content: [call, second] },
      requests: [call, second],
      calls: [Promise.reject(upstream), Promise.reject(cancelled)],
    });
    await expect(outcome).rejects.toBe(cancelled);
  });
});
