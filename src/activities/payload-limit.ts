/**
 * Guards Temporal's payload limit: a result that would be rejected by the server fails at
 * once, non-retryably, naming the tool or model, instead of a workflow task retried forever.
 */
import { KeelError } from '../core/errors';

/** Temporal's hard limit for one payload is 2 MiB; keep headroom for the envelope. */
export const MAX_PAYLOAD_BYTES = 2 * 1024 * 1024 - 64 * 1024;

/** Throws OUT_OF_RANGE when `value` serializes to more than `limit` bytes. */
export function assertPayloadFits(value: unknown, what: string, limit = MAX_PAYLOAD_BYTES): void {
  const size = Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  if (size > limit) {
    throw new KeelError('OUT_OF_RANGE', `${what} is ${(size / 1024 / 1024).toFixed(2)} MiB, over the ${(limit / 1024 / 1024).toFixed(2)} MiB payload limit of one Temporal event`, {
      sizeBytes: size,
      limitBytes: limit,
    });
  }
}
