/**
 * Guards the payload limits: a result that would be rejected fails at once, non-retryably,
 * naming the tool or model and the size, instead of a workflow task retried forever. Inline
 * (External Storage off) the server takes at most 2 MiB per payload; stored, a payload may
 * be as large as the storage driver takes (the S3 driver's default bound, 50 MiB).
 */
import { KeelError } from '../core/errors';

/** Temporal's hard limit for one payload is 2 MiB; keep headroom for the envelope. */
export const MAX_PAYLOAD_BYTES = 2 * 1024 * 1024 - 64 * 1024;

/** The most one stored payload may hold (the S3 driver's default bound; the file driver keeps the same). */
export const MAX_STORED_PAYLOAD_BYTES = 50 * 1024 * 1024;

/** The payload limit of a worker: stored payloads when External Storage is on, inline otherwise. */
export function payloadLimit(storage: { driver: string } | undefined): number {
  return storage && storage.driver !== 'none' ? MAX_STORED_PAYLOAD_BYTES : MAX_PAYLOAD_BYTES;
}

/**
 * The limit a run checks its own payloads against (its result, the input of its next run, a
 * stop's partial result), handed to it with the agent it resolves: set only when External
 * Storage is off, where each of those must fit inline. Stored, each is a payload of its own in
 * the store and the run need not measure them.
 */
export function inlinePayloadLimit(storage: { driver: string } | undefined): number | undefined {
  return storage && storage.driver !== 'none' ? undefined : MAX_PAYLOAD_BYTES;
}

/** Throws OUT_OF_RANGE when `value` serializes to more than `limit` bytes. */
export function assertPayloadFits(value: unknown, what: string, limit = MAX_PAYLOAD_BYTES): void {
  const size = Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  if (size > limit) {
    throw new KeelError(
      'OUT_OF_RANGE',
      `${what} is ${(size / 1024 / 1024).toFixed(2)} MiB, over the ${(limit / 1024 / 1024).toFixed(2)} MiB limit of one payload${limit > MAX_PAYLOAD_BYTES ? ' in External Storage' : ' (External Storage is off; turn it on in temporal.yaml to carry larger ones)'}`,
      {
        sizeBytes: size,
        limitBytes: limit,
      },
    );
  }
}

/**
 * The first place in `value` that JSON cannot carry as it is (undefined, a function, a
 * symbol, a BigInt, NaN or an infinity, a cycle), as a path like `items[2].price`, with what
 * is there; undefined when the whole value survives JSON unchanged. Dates, and objects with
 * `toJSON`, are taken as JSON takes them.
 */
export function unrepresentable(value: unknown, path = '(output)', seen = new Set<object>()): string | undefined {
  const at = (key: string | number) =>
    typeof key === 'number' ? `${path}[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
  switch (typeof value) {
    case 'undefined':
      return `${path} is undefined`;
    case 'function':
      return `${path} is a function`;
    case 'symbol':
      return `${path} is a symbol`;
    case 'bigint':
      return `${path} is a BigInt (${value}n); send it as a string or a number`;
    case 'number':
      return Number.isFinite(value) ? undefined : `${path} is ${value}`;
    case 'object': {
      if (value === null || typeof (value as { toJSON?: unknown }).toJSON === 'function') return undefined;
      if (seen.has(value)) return `${path} refers back to an object that contains it (a cycle)`;
      seen.add(value);
      const entries: Array<[string | number, unknown]> = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value);
      for (const [key, item] of entries) {
        const problem = unrepresentable(item, at(key), seen);
        if (problem) return problem;
      }
      seen.delete(value);
      return undefined;
    }
    default:
      return undefined;
  }
}
