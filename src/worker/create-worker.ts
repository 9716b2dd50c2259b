/**
 * Creates a keel worker: the bundled generate workflow plus the activities, on the
 * config's task queue. Start several (processes or machines) on one queue to scale out.
 * Node side.
 */
import type { Client } from '@temporalio/client';
import { Worker, type ActivityInterceptorsFactory, type NativeConnection, type State, type WorkerOptions } from '@temporalio/worker';
import { modelTaskQueue } from '../core/rate-limit';
import type { Model } from '../define';
import { resolve } from 'node:path';
import { createActivities } from './create-activities';
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

/**
 * A keel worker: the Temporal Worker of the task queue (workflows and activities) and one
 * activity Worker per rate-limited model, on that model's queue. They run and stop together.
 */
export interface KeelWorker {
  /**
   * Creates the Workers of the registry's rate-limited models (the registry may have been filled
   * since this KeelWorker was made, as keel dev's warm worker is), then runs every Worker until
   * shut down (SIGINT/SIGTERM or `shutdown()`); a Worker that fails stops the others.
   */
  run(): Promise<void>;
  /** Starts a graceful shutdown of every running Worker. */
  shutdown(): void;
  /** The state of the task queue's Worker. */
  getState(): State;
  /** The task queue's Worker, then (once running) one per rate-limited model. */
  readonly workers: readonly Worker[];
}

/** Runs the Workers together: all until shut down, and when one fails, the others are shut down too. */
function together(main: Worker, createModelWorkers: () => Promise<Worker[]>): KeelWorker {
  const workers = [main];
  let stopping = false;
  const shutdown = () => {
    stopping = true;
    for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
  };
  return {
    workers,
    shutdown,
    getState: () => main.getState(),
    async run() {
      workers.push(...(await createModelWorkers()));
      const runs = workers.map((worker) =>
        worker.run().catch((error: unknown) => {
          shutdown();
          throw error;
        }),
      );
      // Told to stop while the model Workers were being made: stop them too, now that they run.
      if (stopping) shutdown();
      const settled = await Promise.allSettled(runs);
      const failed = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}

/**
 * The activity Worker of a rate-limited model's queue: Temporal's server hands out at most
 * `requestsPerSecond` of its tasks a second across every worker of the queue, and this worker
 * runs at most `concurrency` of them at once.
 */
function modelWorker(model: Model, options: Omit<WorkerOptions, 'taskQueue' | 'workflowBundle' | 'activities'>, activities: object, taskQueue: string) {
  const { requestsPerSecond, concurrency } = model.rateLimit!;
  return Worker.create({
    ...options,
    taskQueue: modelTaskQueue(taskQueue, model.name),
    activities,
    ...(requestsPerSecond !== undefined ? { maxTaskQueueActivitiesPerSecond: requestsPerSecond } : {}),
    ...(concurrency !== undefined ? { maxConcurrentActivityTaskExecutions: concurrency } : {}),
  });
}

/**
 * Worker Versioning (`deployment` in the config, or KEEL_DEPLOYMENT_NAME and KEEL_BUILD_ID):
 * the worker polls as one build of the deployment, and a run takes `defaultBehavior` unless
 * its memo names another (src/engine/versioning.ts). The rate-limited models' activity
 * Workers poll as the same build, so a pinned run's model calls stay on it.
 */
export function deploymentOptions(config: KeelConfig): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  const deployment = config.deployment;
  if (!deployment) return {};
  return {
    workerDeploymentOptions: {
      useWorkerVersioning: true,
      version: { deploymentName: deployment.name, buildId: deployment.buildId },
      defaultVersioningBehavior: deployment.defaultBehavior === 'autoUpgrade' ? 'AUTO_UPGRADE' : 'PINNED',
    },
  };
}

/** A worker ready to `run()`: the task queue's, and one per rate-limited model. */
export async function createKeelWorker({
  config,
  registry,
  connection,
  client,
  taskQueue,
  bundlePath,
  signingKeys = loadSigningKeys(config),
  onToolCallStart,
}: KeelWorkerOptions): Promise<KeelWorker> {
  const dataConverter = await keelDataConverter(config, { forWorkflows: true });
  // Traced when the OTEL_* variables say so: activity spans, and the workflow's spans through a sink.
  const tracing = tracingFromEnv();
  const middlewareModules = config.middlewareModules.map((module) => resolve(config.baseDir, module));
  const workflowInterceptorModules = tracing ? [tracing.workflowInterceptorModule] : [];
  const queue = taskQueue ?? config.taskQueue;
  const activities = createActivities({ registry, config, client, signingKeys });
  const interceptors = {
    activity: [logRunAttributes, ...(onToolCallStart ? [toolCallStartInterceptor(onToolCallStart)] : []), ...(tracing?.activityInterceptors ?? [])],
  };
  const shared = {
    connection,
    ...deploymentOptions(config),
    ...(dataConverter ? { dataConverter } : {}),
    namespace: config.temporal.namespace,
    interceptors,
    shutdownGraceTime: config.worker.shutdownGraceTime,
    maxHeartbeatThrottleInterval: config.worker.maxHeartbeatThrottleInterval,
  };
  const main = await Worker.create({
    ...shared,
    taskQueue: queue,
    // A prebuilt bundle (the tests') has no tracing module: tracing builds its own.
    workflowBundle: { codePath: (tracing ? undefined : bundlePath) ?? (await workflowBundlePath({ middlewareModules, workflowInterceptorModules })) },
    ...(tracing ? { sinks: tracing.sinks } : {}),
    activities,
    maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivityTaskExecutions,
    maxConcurrentWorkflowTaskExecutions: config.worker.maxConcurrentWorkflowTaskExecutions,
    maxCachedWorkflows: config.worker.maxCachedWorkflows,
    stickyQueueScheduleToStartTimeout: config.worker.stickyQueueScheduleToStartTimeout,
  });
  return together(main, async () => {
    const limited = [...registry.models.values()].filter((model) => model.rateLimit);
    const models: Worker[] = [];
    for (const model of limited) {
      try {
        models.push(await modelWorker(model, shared, activities, queue));
      } catch (error) {
        throw new Error(`cannot create the worker of rate-limited model "${model.name}": ${(error as Error).message}`, { cause: error });
      }
    }
    return models;
  });
}
