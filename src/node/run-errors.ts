/**
 * How a run's failure reads on the client side: what `result()`, an update or a describe
 * threw, as a KeelError with the run's status. Node side.
 */
import { WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { KeelError, findApplicationFailure, fromApplicationFailure } from '../core/errors';

/** Converts what `result()` threw into a KeelError with the run's status. */
export function runErrorOf(error: unknown): KeelError {
  if (error instanceof WorkflowFailedError && error.cause instanceof CancelledFailure) return new KeelError('CANCELLED', 'the run was cancelled');
  if (error instanceof WorkflowFailedError || error instanceof WorkflowUpdateFailedError) {
    const failure = findApplicationFailure(error.cause);
    if (failure) return fromApplicationFailure(failure);
    return KeelError.unclassified(error.cause?.message ?? error.message);
  }
  if (error instanceof WorkflowNotFoundError) return new KeelError('NOT_FOUND', `run "${error.workflowId}" not found`);
  if (KeelError.isInstance(error)) return error;
  return KeelError.unclassified(error instanceof Error ? error.message : String(error));
}
