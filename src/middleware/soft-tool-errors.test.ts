import { CancelledFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { KeelError } from '../core/errors';
import { softToolErrorMessage, softToolErrorsMiddleware } from './soft-tool-errors';
import type { MiddlewareContext } from './types';

const context = {} as MiddlewareContext;
const coverAll = softToolErrorsMiddleware.create({ tools: [] }, context);
const coverSearch = softToolErrorsMiddleware.create({ tools: ['search'] }, context);
const toolFailure = new KeelError('INTERNAL', 'tool "search" failed: upstream timeout', { toolName: 'search', toolMessage: 'upstream timeout', toolOwn: true });

describe('softToolErrors policy', () => {
  it("answers with the tool's own message when covered", () => {
    expect(softToolErrorMessage(toolFailure, 'search', [coverAll])).toBe('upstream timeout');
    expect(softToolErrorMessage(toolFailure, 'search', [coverSearch])).toBe('upstream timeout');
  });

  it('uses the whole message for input and unknown-tool failures', () => {
    const unknown = new KeelError('NOT_FOUND', 'tool "nope" not found; available tools: search', { toolOwn: true });
    expect(softToolErrorMessage(unknown, 'nope', [coverAll])).toBe('tool "nope" not found; available tools: search');
  });

  it('leaves uncovered names alone', () => {
    expect(softToolErrorMessage(toolFailure, 'fetch', [coverSearch])).toBeUndefined();
    expect(softToolErrorMessage(toolFailure, 'search', [])).toBeUndefined();
  });

  it('never covers an error a middleware raised in place of the tool', () => {
    const raisedByHook = new KeelError('PERMISSION_DENIED', 'blocked by policy', { toolName: 'search' });
    expect(softToolErrorMessage(raisedByHook, 'search', [coverAll])).toBeUndefined();
    expect(softToolErrorMessage(new Error('plain'), 'search', [coverAll])).toBeUndefined();
  });

  it('never covers a cancellation', () => {
    expect(softToolErrorMessage(new CancelledFailure('cancelled'), 'search', [coverAll])).toBeUndefined();
  });

  it('combines instances: covered when any covers', () => {
    const coverFetch = softToolErrorsMiddleware.create({ tools: ['fetch'] }, context);
    expect(softToolErrorMessage(toolFailure, 'search', [coverFetch])).toBeUndefined();
    expect(softToolErrorMessage(toolFailure, 'search', [coverFetch, coverSearch])).toBe('upstream timeout');
  });
});
