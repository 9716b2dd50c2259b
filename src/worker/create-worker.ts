/**
 * Creates a keel worker: the bundled generate workflow plus the activities, on the
 * config's task queue. Start several (processes or machines) on one queue to scale out.
 * Node side.
 */
import type { Client } from '@temporalio/client';
import { Worker, type NativeConnection } from '@temporalio/worker';
import { resolve } from 'node:path';
import { createActivities } from '../activities/create-activities';
import type { KeelConfig } from '../config/schema';
import type { Registry } from '../registry';
import { keelDataConverter } from '../storage/data-converter';
import { workflowBundlePath } from './bundle';

/** Options of `createKeelWorker`. */
export interface KeelWorkerOptions {
  config: KeelConfig;
  registry: Registry;
  connection: NativeConnection;
  client: Client;
  /** Overrides the config's task queue. */
  taskQueue?: string;
  /** A prebuilt workflow bundle; built (or taken from the cache) when absent. */
  bundlePath?: string;
}

/** A worker ready to `run()`. */
export async function createKeelWorker({ config, registry, connection, client, taskQueue, bundlePath }: KeelWorkerOptions): Promise<Worker> {
  const dataConverter = await keelDataConverter(config);
  return Worker.create({
    connection,
    ...(dataConverter ? { dataConverter } : {}),
    namespace: config.temporal.namespace,
    taskQueue: taskQueue ?? config.taskQueue,
    workflowBundle: { codePath: bundlePath ?? (await workflowBundlePath({ middlewareModules: config.middlewareModules.map((module) => resolve(config.baseDir, module)) })) },
    activities: createActivities({ registry, config, client }),
    maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivityTaskExecutions,
    maxConcurrentWorkflowTaskExecutions: config.worker.maxConcurrentWorkflowTaskExecutions,
    ...(config.worker.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: config.worker.maxCachedWorkflows } : {}),
    shutdownGraceTime: config.worker.shutdownGraceTime,
    stickyQueueScheduleToStartTimeout: config.worker.stickyQueueScheduleToStartTimeout,
    maxHeartbeatThrottleInterval: config.worker.maxHeartbeatThrottleInterval,
  });
}
