/**
 * A run on a worker that predates an update handler: Temporal rejects the update with its own
 * "No registered handler for update" failure; say instead what that means for keel. Node side.
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { KeelError } from '../core/errors';

/** The keel version before which runs had no `steer` handler (steering came after it). */
export const STEERING_SINCE = '0.1.0';

/**
 * When `error` is the rejection of a `steer` update by a workflow that has no handler for it,
 * UNIMPLEMENTED naming the run and the likely cause; undefined for anything else.
 */
export function unknownSteerError(error: unknown, runId: string): KeelError | undefined {
  if (!(error instanceof WorkflowUpdateFailedError)) return undefined;
  const message = error.cause?.message ?? '';
  if (!/^No registered handler for update: steer$/.test(message)) return undefined;
  return new KeelError(
    'UNIMPLEMENTED',
    `run "${runId}": the worker running it does not know steering (no "steer" update handler: a worker deployed with keel ${STEERING_SINCE} or before, or a workflow that is not a keel run?); update the workers on its task queue and steer again`,
  );
}
