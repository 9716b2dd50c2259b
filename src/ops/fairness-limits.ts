/**
 * Per-tenant limits on the rate-limited models' queues (docs/tenants.md, "Fair shares"): a
 * model's `rateLimit.perTenant` is its queue's fairness key rate limit, which Temporal applies to
 * each tenant's calls (scaled by the tenant's weight) across every worker. It is the task queue's
 * own config, so `keel namespace setup` writes it and `keel deploy check` says when the server's
 * differs from the config's. Node side.
 */
import type { ConnectionLike } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { KeelConfig } from '../config/schema';
import { modelTaskQueue } from '../core/rate-limit';

const ACTIVITY = temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY;

/** One rate-limited model's per-tenant limit: what the config asks (null: none) and what the server had. */
export interface FairnessLimit {
  model: string;
  taskQueue: string;
  perTenant: number | null;
  /** The server's limit before (null: none). */
  was: number | null;
}

/** The rate-limited models of the config, each with its queue and the per-tenant limit it asks (null: none). */
function configuredLimits(config: Pick<KeelConfig, 'models' | 'taskQueue'>): Array<Omit<FairnessLimit, 'was'>> {
  return config.models.flatMap((model) =>
    model.rateLimit ? [{ model: model.name, taskQueue: modelTaskQueue(config.taskQueue, model.name), perTenant: model.rateLimit.perTenant ?? null }] : [],
  );
}

/** The fairness key rate limit the server has on `taskQueue`'s activity queue (null: none). */
async function serverLimit(connection: ConnectionLike, namespace: string, taskQueue: string): Promise<number | null> {
  const { config } = await connection.workflowService.describeTaskQueue({
    namespace,
    taskQueue: { name: taskQueue },
    taskQueueType: ACTIVITY,
    reportConfig: true,
  });
  const limit = config?.fairnessKeysRateLimitDefault?.rateLimit?.requestsPerSecond;
  return typeof limit === 'number' ? limit : null;
}

/** Each rate-limited model's limit as the server has it beside the config's (the queues keel writes). */
export async function readFairnessLimits(connection: ConnectionLike, config: Pick<KeelConfig, 'models' | 'taskQueue' | 'temporal'>): Promise<FairnessLimit[]> {
  return Promise.all(
    configuredLimits(config).map(async (limit) => ({ ...limit, was: await serverLimit(connection, config.temporal.namespace, limit.taskQueue) })),
  );
}

/** Writes each rate-limited model's per-tenant limit where the server's differs (removing one the config no longer asks for). */
export async function writeFairnessLimits(connection: ConnectionLike, config: Pick<KeelConfig, 'models' | 'taskQueue' | 'temporal'>): Promise<FairnessLimit[]> {
  const limits = await readFairnessLimits(connection, config);
  for (const limit of limits.filter(({ perTenant, was }) => perTenant !== was))
    await connection.workflowService.updateTaskQueueConfig({
      namespace: config.temporal.namespace,
      identity: 'keel namespace setup',
      taskQueue: limit.taskQueue,
      taskQueueType: ACTIVITY,
      // No rate limit in the update removes the queue's.
      updateFairnessKeyRateLimitDefault: {
        ...(limit.perTenant !== null ? { rateLimit: { requestsPerSecond: limit.perTenant } } : {}),
        reason: `keel: models[${limit.model}].rateLimit.perTenant`,
      },
    });
  return limits;
}

/** A limit for a person: `2/s per tenant`, or `none`. */
export function describeLimit(perTenant: number | null): string {
  return perTenant === null ? 'none' : `${perTenant}/s per tenant`;
}
