/**
 * A model's rate limit: calls to it go to a task queue of their own, which every keel worker
 * polls with Temporal's task queue rate limit (server-side, for all workers of the queue) and a
 * cap on the calls it runs at once (per worker). Pure, safe on both sides.
 */
import { z } from 'zod';

/** `rateLimit` of a model. */
export const ModelRateLimitSchema = z
  .object({
    /** Most calls started per second, across every worker (Temporal's task queue rate limit). */
    requestsPerSecond: z.number().positive('must be more than 0').optional(),
    /** Most calls in flight at once on each worker (a worker's cap: with N workers, N × this in all). */
    concurrency: z.number().int().min(1).optional(),
    /**
     * Most calls started per second for each tenant, across every worker: the queue's fairness
     * key rate limit, scaled by the tenant's weight (written by `keel namespace setup`).
     */
    perTenant: z.number().positive('must be more than 0').optional(),
  })
  .strict()
  .refine((limit) => limit.requestsPerSecond !== undefined || limit.concurrency !== undefined || limit.perTenant !== undefined, {
    error: 'set requestsPerSecond, concurrency, perTenant, or more than one',
  });
export type ModelRateLimit = z.infer<typeof ModelRateLimitSchema>;

/** The task queue of a rate-limited model's calls: `<taskQueue>-model-<model name>`. */
export function modelTaskQueue(taskQueue: string, model: string): string {
  return `${taskQueue}-model-${model}`;
}
