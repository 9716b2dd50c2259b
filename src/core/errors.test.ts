import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { KeelError, UNCLASSIFIED, fromApplicationFailure, toApplicationFailure, toKeelError } from './errors';
import { statusFromHttp } from './status';

describe('errors across the activity boundary', () => {
  it('keeps status, message and details through an ApplicationFailure', () => {
    const failure = toApplicationFailure(new KeelError('UNAVAILABLE', 'overloaded', { retryAfterMs: 5 }));
    expect(failure.type).toBe('UNAVAILABLE');
    expect(failure.nonRetryable).toBe(true);
    const back = fromApplicationFailure(failure);
    expect(back).toMatchObject({ status: 'UNAVAILABLE', message: 'overloaded', classified: true });
    expect(back.details.retryAfterMs).toBe(5);
  });

  it('marks plain errors unclassified (reported as INTERNAL)', () => {
    const error = toKeelError(new Error('socket hang up'));
    expect(error).toMatchObject({ status: 'INTERNAL', classified: false });
    expect(toApplicationFailure(error).type).toBe(UNCLASSIFIED);
    expect(fromApplicationFailure(toApplicationFailure(error)).classified).toBe(false);
  });

  it('finds the failure in a cause chain and recognises KeelErrors from any context', () => {
    const wrapped = Object.assign(new Error('outer'), { cause: ApplicationFailure.create({ type: 'NOT_FOUND', message: 'gone' }) });
    expect(toKeelError(wrapped).status).toBe('NOT_FOUND');
    expect(KeelError.isInstance({ __keelError: true })).toBe(true);
    expect(KeelError.isInstance(new Error('x'))).toBe(false);
  });
});

describe('HTTP status mapping', () => {
  it.each([
    [400, 'INVALID_ARGUMENT'],
    [401, 'UNAUTHENTICATED'],
    [403, 'PERMISSION_DENIED'],
    [404, 'NOT_FOUND'],
    [409, 'ABORTED'],
    [429, 'RESOURCE_EXHAUSTED'],
    [500, 'INTERNAL'],
    [503, 'UNAVAILABLE'],
    [504, 'DEADLINE_EXCEEDED'],
    [599, 'INTERNAL'],
    [418, 'UNKNOWN'],
  ] as const)('%i → %s', (code, status) => {
    expect(statusFromHttp(code)).toBe(status);
  });
});
