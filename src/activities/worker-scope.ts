/**
 * What every activity of one worker shares (built once per worker by `createActivities`), and
 * the wrapper each activity runs in: errors leave as ApplicationFailure with the status as type
 * (application outcomes non-retryable, infrastructure failures retryable). Node side.
 */
import type { KeelConfig } from '../config/schema';
import type { SigningKeys } from '../security/signing-keys';
import { CancelledFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure, type Duration } from '@temporalio/common';
import { toApplicationFailure, toKeelError } from '../core/errors';
import { ModelVisibleToolError, TOOL_FAIL_FAILURE, TOOL_INTERRUPT_FAILURE } from '../core/interrupts';
import type { RefusedBefore } from '../core/run';
import type { Registry } from '../registry';
import { InfrastructureError, toRetryableFailure } from './infrastructure-error';
import { NotRegisteredError, notRegisteredFailure } from './not-registered';

/** What the activities need. */
export interface ActivityDependencies {
  registry: Registry;
  config: Pick<KeelConfig, 'activities'> &
    Partial<Pick<KeelConfig, 'externalStorage' | 'security' | 'baseDir' | 'notify' | 'serve' | 'fairness' | 'metrics'>> & {
      worker?: Partial<KeelConfig['worker']>;
    };
  /** The keys proofs are signed with; loaded from the config (KEEL_SIGNING_KEY or its key file) when absent. */
  signingKeys?: SigningKeys;
  /** Client used to read model requests back from their run. */
  client: Client;
  /** How long reading a model request back from its run may wait for an answer (default 10 s). */
  modelRequestTimeout?: Duration;
}

/** Which of keel's search attributes a namespace has, by what a run does with them. */
export interface IndexedAttributes {
  indexed: boolean;
  forks: boolean;
  principals: boolean;
}

/** What the activities of one worker share. */
export interface WorkerScope {
  registry: Registry;
  config: ActivityDependencies['config'];
  client: Client;
  /** How long reading a model request back from its run may wait. */
  modelRequestTimeout: Duration;
  /** The largest payload an answer may be, and the largest model request that rides in an activity's input. */
  limit: number;
  inlineLimit: number | undefined;
  /** Runs one activity's work (see `asActivity`), carrying what refusals of the call recorded. */
  activity: <T>(work: () => Promise<T>, refusedBefore?: RefusedBefore) => Promise<T>;
  /** Whether the namespace has keel's search attributes: asked once per worker, on the first run. */
  searchAttributes: () => Promise<IndexedAttributes>;
}

const INTERRUPT_REQUEST = '__keelInterruptRequest';

/** Thrown by ToolContext.interrupt; carries the hold's data out of the activity. */
export class InterruptRequest extends Error {
  readonly [INTERRUPT_REQUEST] = true;
  constructor(readonly data: Record<string, unknown>) {
    super('tool asked to interrupt');
  }
}

/**
 * Runs `work`, turning any error into a non-retryable ApplicationFailure with a status,
 * except an InfrastructureError, which stays retryable for the activity's retry policy. A
 * call that was cancelled reports the SDK's CancelledFailure instead, so Temporal records a
 * cancellation (not a failure) and a workflow waiting for it can end.
 */
export async function asActivity<T>(
  work: () => Promise<T>,
  { retryFor, client, refusedBefore }: { retryFor: Duration; client: Client; refusedBefore?: RefusedBefore },
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const { cancellationSignal } = Context.current();
    if (cancellationSignal.aborted && cancellationSignal.reason instanceof CancelledFailure) throw cancellationSignal.reason;
    if (NotRegisteredError.isInstance(error)) {
      const failure = await notRegisteredFailure(error, { retryFor, client, refusedBefore });
      throw failure instanceof ApplicationFailure ? failure : toApplicationFailure(failure);
    }
    if (error instanceof InterruptRequest) {
      throw ApplicationFailure.create({ type: TOOL_INTERRUPT_FAILURE, message: 'tool asked to interrupt', nonRetryable: true, details: [error.data] });
    }
    if (ModelVisibleToolError.isInstance(error)) throw ApplicationFailure.create({ type: TOOL_FAIL_FAILURE, message: error.message, nonRetryable: true });
    if (InfrastructureError.isInstance(error)) throw toRetryableFailure(error);
    if (error instanceof ApplicationFailure) throw error;
    throw toApplicationFailure(toKeelError(error));
  }
}
