/**
 * Durations as config and run specs write them ('30 seconds', '5m', '250ms'), typed as
 * Temporal's Duration. Pure: safe in workflow code.
 */
import { msToNumber } from '@temporalio/common/lib/time';
import type { Duration } from '@temporalio/common';
import { z } from 'zod';

const DURATION_PATTERN = /^\d+(\.\d+)?\s*(ms|msecs?|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)$/;

/** A duration string such as "30 seconds", "5m" or "250ms". */
export const DurationSchema = z
  .string()
  .regex(DURATION_PATTERN, 'expected a duration such as "30 seconds", "5m" or "250ms"')
  .transform((value) => value as Duration & string);

/** The milliseconds a duration such as "3 days", "72h" or "250ms" stands for; undefined when `text` is not one. */
export function durationMs(text: string): number | undefined {
  try {
    const ms = msToNumber(text as Duration);
    return Number.isFinite(ms) ? ms : undefined;
  } catch {
    return undefined;
  }
}
