/**
 * Infrastructure failures inside an activity: the activity could not reach Temporal, or a
 * workflow worker through it (a connection error, a deadline exceeded, a query no worker
 * answered). keel's other errors are application outcomes and leave an activity
 * non-retryable (the Retry middleware decides about them); these leave it retryable, so
 * the activity's own retry policy (`activities.<kind>.retry`) tries again. Node side.
 */
import { ApplicationFailure } from '@temporalio/common';
import { KeelError, type KeelErrorDetails } from '../core/errors';

const MARK = '__keelInfrastructureError';

/** A failure to reach Temporal; status UNAVAILABLE, retried by the activity's retry policy. */
export class InfrastructureError extends KeelError {
  readonly [MARK] = true;

  constructor(message: string, details: KeelErrorDetails = {}) {
    super('UNAVAILABLE', message, details);
    this.name = 'InfrastructureError';
  }

  /** True for any InfrastructureError, even one built in another V8 context. */
  static override isInstance(error: unknown): error is InfrastructureError {
    return KeelError.isInstance(error) && (error as unknown as Record<string, unknown>)[MARK] === true;
  }
}

/**
 * The retryable ApplicationFailure an InfrastructureError leaves its activity as. When
 * the attempts run out, the workflow sees status UNAVAILABLE with this message.
 */
export function toRetryableFailure(error: InfrastructureError): ApplicationFailure {
  return ApplicationFailure.create({ type: error.status, message: error.message, nonRetryable: false, details: [error.details] });
}
