/**
 * Retry (reference: genkit-middleware/retry): retries each failed model call with
 * exponential backoff and jitter. Never the whole loop, never tools. Runs in the workflow:
 * the jitter comes from the workflow's seeded random, the waits are durable timers, so a
 * worker restart during a backoff neither resets nor skips it.
 */
import { isCancellation, log, sleep } from '@temporalio/workflow';
import { z } from 'zod';
import { RunStoppedError, toKeelError, type KeelError } from '../../core/errors';
import { StatusNameSchema, type StatusName } from '../../core/status';
import { defineMiddleware } from '../../middleware/define-middleware';

/** Statuses retried by default. */
export const DEFAULT_RETRY_STATUSES: readonly StatusName[] = ['UNAVAILABLE', 'DEADLINE_EXCEEDED', 'RESOURCE_EXHAUSTED', 'ABORTED', 'INTERNAL'];

/** Retry's config. As in the reference, a non-positive number means "use the default". */
export const RetryConfigSchema = z
  .object({
    /** Retries after the first attempt (default 3). */
    maxRetries: z.number().int().optional(),
    /** Classified errors with these statuses are retried; unclassified errors always are. */
    statuses: z.array(StatusNameSchema).optional(),
    /** Delay before the first retry (default 1000). */
    initialDelayMs: z.number().optional(),
    /** Upper bound of the delay (default 60000). */
    maxDelayMs: z.number().optional(),
    /** Delay multiplier after each retry (default 2). */
    backoffFactor: z.number().optional(),
    /** Disables the random jitter added to each delay. */
    noJitter: z.boolean().optional(),
  })
  .strict();
export type RetryConfig = z.input<typeof RetryConfigSchema>;

const positive = (value: number | undefined, fallback: number) => (value !== undefined && value > 0 ? value : fallback);

/** Retry: `use: [retry({ maxRetries: 2 })]` */
export const retry = defineMiddleware({
  name: 'retry',
  description: 'Retries failed model calls with exponential backoff.',
  configSchema: RetryConfigSchema,
  create(config) {
    const maxRetries = positive(config.maxRetries, 3);
    const statuses = config.statuses?.length ? config.statuses : DEFAULT_RETRY_STATUSES;
    const initialDelayMs = positive(config.initialDelayMs, 1000);
    const maxDelayMs = positive(config.maxDelayMs, 60_000);
    const backoffFactor = positive(config.backoffFactor, 2);
    const retryable = (error: KeelError) => error.status !== 'CANCELLED' && (!error.classified || statuses.includes(error.status));
    return {
      async wrapModel(params, next) {
        let delay = initialDelayMs;
        for (let attempt = 0; ; attempt++) {
          try {
            return await next(params);
          } catch (error) {
            if (isCancellation(error)) throw error;
            const failure = toKeelError(error);
            if (attempt >= maxRetries || !retryable(failure)) throw error;
            let wait = delay + (config.noJitter ? 0 : Math.random() * 1000 * 2 ** attempt);
            if (typeof failure.details.retryAfterMs === 'number') wait = Math.max(wait, failure.details.retryAfterMs);
            wait = Math.round(wait);
            log.info('model call failed, retrying', { model: params.model, attempt: attempt + 1, waitMs: wait, status: failure.status });
            try {
              await sleep(wait);
            } catch (sleepError) {
              // Cancelled during the backoff: end at once with the model's last error.
              if (isCancellation(sleepError))
                throw new RunStoppedError({ status: failure.status, message: failure.message, cancelled: true, classified: failure.classified });
              throw sleepError;
            }
            delay = Math.min(delay * backoffFactor, maxDelayMs);
          }
        }
      },
    };
  },
});
