/**
 * Status names: the closed vocabulary every keel error carries (the reference's list),
 * with their numeric codes and HTTP mappings. Pure: safe in workflow code.
 */
import { z } from 'zod';

/** The canonical status names, in code order. */
export const STATUS_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;

/** Schema of a status name. */
export const StatusNameSchema = z.enum(STATUS_NAMES);
/** One of the canonical status names. */
export type StatusName = z.infer<typeof StatusNameSchema>;

/** HTTP status of each status name, as the reference maps them. */
export const STATUS_HTTP_CODES: Record<StatusName, number> = {
  OK: 200,
  CANCELLED: 499,
  UNKNOWN: 500,
  INVALID_ARGUMENT: 400,
  DEADLINE_EXCEEDED: 504,
  NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  PERMISSION_DENIED: 403,
  RESOURCE_EXHAUSTED: 429,
  FAILED_PRECONDITION: 400,
  ABORTED: 409,
  OUT_OF_RANGE: 400,
  UNIMPLEMENTED: 501,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  DATA_LOSS: 500,
  UNAUTHENTICATED: 401,
};

/** True when `value` is one of the canonical status names. */
export function isStatusName(value: unknown): value is StatusName {
  return typeof value === 'string' && (STATUS_NAMES as readonly string[]).includes(value);
}

/**
 * Maps an HTTP status code to a status name: the exact code when one name owns it,
 * 400 → INVALID_ARGUMENT, 409 → ABORTED, any other 5xx → INTERNAL, anything else UNKNOWN.
 */
export function statusFromHttp(code: number): StatusName {
  switch (code) {
    case 400:
      return 'INVALID_ARGUMENT';
    case 401:
      return 'UNAUTHENTICATED';
    case 403:
      return 'PERMISSION_DENIED';
    case 404:
      return 'NOT_FOUND';
    case 408:
      return 'DEADLINE_EXCEEDED';
    case 409:
      return 'ABORTED';
    case 429:
      return 'RESOURCE_EXHAUSTED';
    case 499:
      return 'CANCELLED';
    case 501:
      return 'UNIMPLEMENTED';
    case 503:
      return 'UNAVAILABLE';
    case 504:
      return 'DEADLINE_EXCEEDED';
    default:
      return code >= 500 ? 'INTERNAL' : 'UNKNOWN';
  }
}
