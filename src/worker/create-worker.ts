/**
 * Creates a keel worker: the bundled generate workflow plus the activities, on the
 * config's task queue. Start several (processes or machines) on one queue to scale out.
 * Node side.
 */
import type { Client } from '@temporalio/client';
import { Worker, type ActivityInterceptorsFactory, type NativeConnection } from '@temporalio/worker';
import { resolve } from 'node:path';
import { createActivities } from '../activities/create-activities';
import type { KeelConfig } from '../config/schema';
import type { Registry } from '../registry';
import { keelDataConverter } from '../storage/data-converter';
import { loadSigningKeys, type SigningKeys } from '../security/signing-keys';
import { tracingFromEnv } from '../telemetry/tracing';
import { workflowBundlePath } from './bundle';
import { toolCallStartInterceptor, type ToolCallStart } from './tool-call-start';

/**
 * Activity logs name the run's agent and turn (the model and tool calls carry them), besides
 * the ids Temporal adds.
 */
const logRunAttributes: ActivityInterceptorsFactory = () => {
  const attributes: Record<string, unknown> = {};
  return {
    inbound: {
      execute: (input, next) => {
        const arg = input.args[0] as { agent?: unknown; turn?: unknown } | undefined;
        if (typeof arg?.agent === 'string') attributes.agent = arg.agent;
        if (typeof arg?.turn === 'number') attributes.turn = arg.turn;
        return next(input);
      },
    },
    outbound: {
      getLogAttributes: (input, next) => next({ ...input, ...attributes }),
    },
  };
};

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
  /** The keys proofs are signed with; loaded from the config when absent. */
  signingKeys?: SigningKeys;
  /** Called as each tool call's attempt starts on this worker (`keel worker` logs a line with it). */
  onToolCallStart?: (call: ToolCallStart) => void;
}

/** A worker ready to `run()`. */
export async function createKeelWorker({
  config,
  registry,
  connection,
  client,
  taskQueue,
  bundlePath,
  signingKeys = loadSigningKeys(config),
  onToolCallStart,
}: KeelWorkerOptions): Promise<Worker> {
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
    interceptors: {
      activity: [logRunAttributes, ...(onToolCallStart ? [toolCallStartInterceptor(onToolCallStart)] : []), ...(tracing?.activityInterceptors ?? [])],
    },
    ...(tracing ? { sinks: tracing.sinks } : {}),
    activities: createActivities({ registry, config, client, signingKeys }),
    maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivityTaskExecutions,
    maxConcurrentWorkflowTaskExecutions: config.worker.maxConcurrentWorkflowTaskExecutions,
    ...(config.worker.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: config.worker.maxCachedWorkflows } : {}),
    shutdownGraceTime: config.worker.shutdownGraceTime,
    stickyQueueScheduleToStartTimeout: config.worker.stickyQueueScheduleToStartTimeout,
    maxHeartbeatThrottleInterval: config.worker.maxHeartbeatThrottleInterval,
  });
}
