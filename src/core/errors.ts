/**
 * keel's error type: a status from the closed vocabulary, a message, and structured
 * details. Crosses the activity and workflow boundaries as an `ApplicationFailure` whose
 * `type` is the status name, so the status survives. Pure: safe in workflow code.
 */
import { ApplicationFailure } from '@temporalio/common';
import { isStatusName, type StatusName } from './status';

/**
 * Failure type of an error that carries no status (a plain `Error` thrown by provider or
 * tool code). The reference calls these "unclassified": Retry always retries them and
 * Fallback never falls over on them.
 */
export const UNCLASSIFIED = 'UNCLASSIFIED';

/**
 * Failure type of an activity refused by a worker that lacks the agent, model or tool it names
 * (retryable: another worker may have it); once the retries are over it reads as NOT_FOUND.
 */
export const NOT_REGISTERED_FAILURE = 'KEEL_NOT_REGISTERED';

/** Structured fields an error may carry; all JSON-plain. */
export interface KeelErrorDetails {
  /** The tool the error is about. */
  toolName?: string;
  /** The model the error is about. */
  modelName?: string;
  /** Tools that were available when a tool was not found. */
  availableTools?: string[];
  /** For a tool failure: the tool's own message, without keel's prefix. */
  toolMessage?: string;
  /** For a schema failure: the path of the offending field. */
  path?: string;
  /** A provider asked to wait this long before trying again (Retry-After). */
  retryAfterMs?: number;
  /** Free-form extra data. */
  [key: string]: unknown;
}

const MARK = '__keelError';

/** An error with a status name. Use `KeelError.isInstance`, not `instanceof`, across isolates. */
export class KeelError extends Error {
  /** Status name from the closed vocabulary. */
  readonly status: StatusName;
  /** False for an error whose status was not stated by its source (see UNCLASSIFIED). */
  readonly classified: boolean;
  /** Structured details. */
  readonly details: KeelErrorDetails;
  readonly [MARK] = true;

  constructor(status: StatusName, message: string, details: KeelErrorDetails = {}, classified = true) {
    super(message);
    this.name = 'KeelError';
    this.status = status;
    this.details = details;
    this.classified = classified;
  }

  /** True for any KeelError, even one built in another V8 context. */
  static isInstance(error: unknown): error is KeelError {
    return typeof error === 'object' && error !== null && (error as Record<string, unknown>)[MARK] === true;
  }

  /** An error whose status is unknown (reference: unclassified). Reported as INTERNAL. */
  static unclassified(message: string, details: KeelErrorDetails = {}): KeelError {
    return new KeelError('INTERNAL', message, details, false);
  }

  /** Plain JSON form, as results and the CLI print it. */
  toJSON(): { status: StatusName; message: string } {
    return { status: this.status, message: this.message };
  }
}

/** Wraps anything thrown into a KeelError; errors without a status become unclassified. */
export function toKeelError(error: unknown): KeelError {
  if (KeelError.isInstance(error)) return error;
  const failure = findApplicationFailure(error);
  if (failure) return fromApplicationFailure(failure);
  const message = error instanceof Error ? error.message : String(error);
  return KeelError.unclassified(message);
}

/**
 * Converts a KeelError to an ApplicationFailure for crossing a Temporal boundary.
 * Always non-retryable: keel's statuses are application-level outcomes, retried (or not)
 * by the Retry middleware; Temporal's own retries are kept for infrastructure failures.
 */
export function toApplicationFailure(error: KeelError): ApplicationFailure {
  return ApplicationFailure.create({
    type: error.classified ? error.status : UNCLASSIFIED,
    message: error.message,
    nonRetryable: true,
    details: [error.details],
    nextRetryDelay: undefined,
  });
}

/** Rebuilds a KeelError from an ApplicationFailure produced by `toApplicationFailure`. */
export function fromApplicationFailure(failure: ApplicationFailure): KeelError {
  const details = (failure.details?.[0] ?? {}) as KeelErrorDetails;
  if (failure.type === UNCLASSIFIED) return KeelError.unclassified(failure.message, details);
  if (failure.type === NOT_REGISTERED_FAILURE) return new KeelError('NOT_FOUND', failure.message, details);
  if (isStatusName(failure.type)) return new KeelError(failure.type, failure.message, details);
  return KeelError.unclassified(failure.message, details);
}

/** Walks `cause` links to the first ApplicationFailure, if any. */
export function findApplicationFailure(error: unknown): ApplicationFailure | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 10; depth++) {
    if (current instanceof ApplicationFailure) return current;
    if (typeof current === 'object' && (current as { name?: string }).name === 'ApplicationFailure') {
      return current as ApplicationFailure;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

const STOPPED_MARK = '__keelRunStopped';

/**
 * The run was stopped on purpose (a budget reached, a cancellation during a backoff): it
 * ends with finish reason `aborted` and keeps its partial response, unlike a failure.
 */
export class RunStoppedError extends KeelError {
  readonly [STOPPED_MARK] = true;
  /** True when the stop is the run's cancellation (the run reports `cancelled`). */
  readonly cancelled: boolean;

  constructor({ status, message, cancelled = false, classified = true }: { status: StatusName; message: string; cancelled?: boolean; classified?: boolean }) {
    super(status, message, {}, classified);
    this.name = 'RunStoppedError';
    this.cancelled = cancelled;
  }

  /** True for a RunStoppedError from any V8 context. */
  static override isInstance(error: unknown): error is RunStoppedError {
    return typeof error === 'object' && error !== null && (error as Record<string, unknown>)[STOPPED_MARK] === true;
  }
}

const TOOL_FAILURE_MARK = '__keelToolFailure';

/**
 * A tool call failed on its own: the tool threw, its input failed the tool's schema, or no
 * such tool exists. Only these may be answered to the model as `{ error }` (SoftToolErrors);
 * errors a hook raises in their place never are.
 */
export class ToolFailure extends KeelError {
  readonly [TOOL_FAILURE_MARK] = true;
  /** What the model is shown when the failure is answered: the tool's own words. */
  readonly modelMessage: string;

  constructor({
    status,
    message,
    toolName,
    modelMessage = message,
    details = {},
    classified = true,
  }: {
    status: StatusName;
    message: string;
    toolName: string;
    modelMessage?: string;
    details?: KeelErrorDetails;
    classified?: boolean;
  }) {
    super(status, message, { ...details, toolName }, classified);
    this.name = 'ToolFailure';
    this.modelMessage = modelMessage;
  }

  /** True for a ToolFailure from any V8 context. */
  static override isInstance(error: unknown): error is ToolFailure {
    return typeof error === 'object' && error !== null && (error as Record<string, unknown>)[TOOL_FAILURE_MARK] === true;
  }
}

/** The tool's own failure, answered to the model (when covered) in the tool's own words: `details.toolMessage`, else its message. */
export function ownToolFailure({ status, message, details, classified }: KeelError, toolName: string): ToolFailure {
  const modelMessage = typeof details.toolMessage === 'string' ? details.toolMessage : message;
  return new ToolFailure({ status, message, toolName, modelMessage, details, classified });
}
