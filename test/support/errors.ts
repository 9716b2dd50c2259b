/** Awaits a promise that must reject with a KeelError, and returns that error. */
import { KeelError } from '../../src/core/errors';

/** The KeelError `promise` rejects with; fails the test if it resolves or rejects otherwise. */
export async function keelFailure(promise: Promise<unknown>): Promise<KeelError> {
  try {
    await promise;
  } catch (error) {
    if (KeelError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a KeelError, but the promise resolved');
}
