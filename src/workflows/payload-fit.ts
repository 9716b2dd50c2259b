/**
 * What a run sends Temporal whole, measured before it is sent when External Storage is off
 * (the resolved agent's `inlinePayloadLimit`): its result, the input of the next run of its
 * chain, and a stop's partial result. Each tool or model output is bounded by its activity,
 * but these carry the whole conversation, which grows past the limit from outputs that each
 * fit. Sent as they are, the server refuses the command and terminates the run with an
 * INTERNAL `… exceeds size limit`; measured here, the run fails OUT_OF_RANGE naming what grew,
 * its size and the fix. Runs in the workflow: deterministic, no I/O.
 */

import { KeelError } from '../core/errors';
import type { RunResult } from '../core/run';
import { utf8Length } from './call-model';

/** Bytes of `values` as the default payload converter encodes them (JSON in UTF-8), one payload each. */
export function payloadBytes(values: readonly unknown[]): number {
  let bytes = 0;
  for (const value of values) bytes += utf8Length(JSON.stringify(value) ?? '');
  return bytes;
}

/** A size in MiB, as keel's payload errors print it. */
function mebibytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
}

/**
 * The size of `values` when, sent together, they are over `limit`; undefined when they fit or
 * the limit is undefined (payloads stored).
 */
function overLimit(values: readonly unknown[], limit: number | undefined): number | undefined {
  if (limit === undefined) return undefined;
  const size = payloadBytes(values);
  return size > limit ? size : undefined;
}

/** Why the size matters and what to do, the end of every message here. */
function remedy(messageCount: number): string {
  return `External Storage is off (externalStorage.driver: none), so the whole conversation (${messageCount} messages) must fit in one payload; turn on externalStorage with driver file or s3 in temporal.yaml, or keep the conversation short with ContextCompression (replaceHistory: true)`;
}

/** The error of a run whose `what` is `size` bytes, over `limit`. */
function tooBig(what: string, size: number, limit: number, messageCount: number): KeelError {
  return new KeelError('OUT_OF_RANGE', `${what} is ${mebibytes(size)}, over the ${mebibytes(limit)} limit of one payload: ${remedy(messageCount)}`, {
    sizeBytes: size,
    limitBytes: limit,
  });
}

/** Throws OUT_OF_RANGE when the result of run `runId` would not fit inline. */
export function assertResultFits(runId: string, result: RunResult, limit: number | undefined): void {
  const size = overLimit([result], limit);
  if (size !== undefined) throw tooBig(`the result of run ${runId}`, size, limit!, result.messages.length);
}

/**
 * Throws OUT_OF_RANGE when the input of the next run of `runId`'s chain would not fit inline:
 * the server bounds a continue-as-new's arguments together, so the conversation's chunks count
 * as one payload here.
 */
export function assertContinuedFits(runId: string, args: readonly unknown[], messageCount: number, limit: number | undefined): void {
  const size = overLimit(args, limit);
  if (size !== undefined) throw tooBig(`the input of the next run of run ${runId} (continue-as-new: its conversation and state)`, size, limit!, messageCount);
}

/** A stop's partial result (RunStoppedError): what the run had when it stopped. */
export interface PartialResult {
  finishReason: string;
  text: string;
  messages?: unknown[];
  usage: unknown;
  turns: number;
  artifacts?: unknown[];
}

/**
 * The failure a stopped run ends with, as `{ message, details }`, made to fit inline: over
 * `limit`, the partial result leaves out its conversation and artifacts (then its text), and
 * the message says so; its usage, turns and finish reason always stay.
 */
export function fittingStop({
  message,
  details,
  partial,
  limit,
}: {
  message: string;
  details: Record<string, unknown>;
  partial: PartialResult;
  limit: number | undefined;
}): { message: string; details: Record<string, unknown> } {
  const size = overLimit([message, { ...details, partial }], limit);
  if (size === undefined) return { message, details: { ...details, partial } };
  const { messages: _messages, artifacts: _artifacts, ...kept } = partial;
  const fits = payloadBytes([message, { ...details, partial: kept }]) <= limit!;
  const { text: _text, ...bare } = kept;
  return {
    message: `${message} (its partial result, ${mebibytes(size)}, is over the ${mebibytes(limit!)} limit of one payload and keeps only its ${fits ? 'text, ' : ''}usage and turns: ${remedy(partial.messages?.length ?? 0)})`,
    details: { ...details, partial: fits ? kept : bare, sizeBytes: size, limitBytes: limit! },
  };
}
