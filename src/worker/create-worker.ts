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
import { tracingFromEnv } from '../telemetry/tracing';
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
  // Traced when the OTEL_* variables say so: activity spans, and the workflow's spans through a sink.
  const tracing = tracingFromEnv();
  const middlewareModules = config.middlewareModules.map((module) => resolve(config.baseDir, module));
  const workflowInterceptorModules = tracing ? [tracing.workflowInterceptorModule] : [];
  return Worker.create({
    connection,
    ...(dataConverter ? { dataConverter } : {}),
    namespace: config.temporal.namespace,
    taskQueue: taskQueue ?? config.taskQueue,
    // A prebuilt bundle (the tests') has no tracing module: tracing builds its own.
    workflowBundle: { codePath: (tracing ? undefined : bundlePath) ?? (await workflowBundlePath({ middlewareModules, workflowInterceptorModules })) },
    ...(tracing ? { interceptors: { activity: tracing.activityInterceptors }, sinks: tracing.sinks } : {}),
    activities: createActivities({ registry, config, client }),
    maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivityTaskExecutions,
    maxConcurrentWorkflowTaskExecutions: config.worker.maxConcurrentWorkflowTaskExecutions,
    ...(config.worker.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: config.worker.maxCachedWorkflows } : {}),
    shutdownGraceTime: config.worker.shutdownGraceTime,
    stickyQueueScheduleToStartTimeout: config.worker.stickyQueueScheduleToStartTimeout,
    maxHeartbeatThrottleInterval: config.worker.maxHeartbeatThrottleInterval,
  });
}
