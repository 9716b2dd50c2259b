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

/** True when `value` is one of the canonical status names. */
export function isStatusName(value: unknown): value is StatusName {
  return typeof value === 'string' && (STATUS_NAMES as readonly string[]).includes(value);
}

/** What keel's HTTP servers answer each status with (anything else: 500). */
const HTTP_OF: Readonly<Record<string, number>> = {
  INVALID_ARGUMENT: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  FAILED_PRECONDITION: 409,
  ALREADY_EXISTS: 409,
  UNAVAILABLE: 503,
};

/** The HTTP code keel's servers answer a failure of `status` with. */
export function httpStatusOf(status: string): number {
  return HTTP_OF[status] ?? 500;
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
