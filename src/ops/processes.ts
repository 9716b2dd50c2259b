/**
 * The long-running commands: `keel server`, `keel worker`, `keel dev`. Each runs in the
 * foreground until SIGINT/SIGTERM and then stops cleanly. Node side.
 */
import { metricsExporter } from '../telemetry/metrics';
import { servePrometheus } from '../telemetry/prometheus';
import type { GuardedServer } from '../node/http-guard';
import { Runtime } from '@temporalio/worker';
import type { KeelConfig } from '../config/schema';
import { waitForSignal } from '../node/signals';
import { ConfigError } from '../config/load';
import { KeelError } from '../core/errors';
import { isServerReachable, startConfiguredServer, type ConfiguredServerOptions, type DevServer } from '../server/dev-server';
import { describeServerOwner } from '../server/server-owner';
import { connectClient, connectWorker, tlsMismatch } from '../worker/connect';
import { createKeelWorker, type KeelWorker } from '../worker/create-worker';
import { loadSigningKeys, type SigningKeys } from '../security/signing-keys';
import { loadRegistry } from '../worker/load-registry';
import { WORKFLOW_TYPES } from '../worker/bundle';
import { describeToolCallStart, type ToolCallStart } from '../worker/tool-call-start';
import { workerLogger } from '../worker/worker-log';
import type { Registry } from '../registry';

let runtimeInstalled: Promise<void> | undefined;

const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'] as const;

/**
 * Installs the SDK runtime once, logging at $KEEL_LOG_LEVEL (default WARN; a failed call or run
 * on one line, src/worker/worker-log.ts), with the metrics exporter the config's `metrics` (or
 * the OTEL_* variables) ask for; `metrics.prometheus` is served first, so an address that cannot
 * be served installs nothing.
 */
export function installRuntime(config?: Pick<KeelConfig, 'metrics'>, logLine?: (line: string) => void): Promise<void> {
  // Once per process; a failure (a metrics port still held) is tried again by the next call.
  runtimeInstalled ??= install(config, logLine).catch((error: unknown) => {
    runtimeInstalled = undefined;
    throw error;
  });
  return runtimeInstalled;
}

async function install(config: Pick<KeelConfig, 'metrics'> | undefined, logLine: ((line: string) => void) | undefined): Promise<void> {
  const wanted = (process.env.KEEL_LOG_LEVEL ?? 'WARN').toUpperCase();
  const level = (LOG_LEVELS as readonly string[]).includes(wanted) ? (wanted as (typeof LOG_LEVELS)[number]) : 'WARN';
  if (level !== wanted) process.stderr.write(`keel: KEEL_LOG_LEVEL=${process.env.KEEL_LOG_LEVEL} is not one of ${LOG_LEVELS.join(', ')}; using WARN\n`);
  const metrics = config ? metricsExporter(config) : undefined;
  const address = config?.metrics.prometheus;
  let endpoint: GuardedServer | undefined;
  if (metrics && 'buffer' in metrics && address !== undefined) {
    try {
      endpoint = await servePrometheus({ address, buffer: metrics.buffer, known: { workflow_type: new Set(WORKFLOW_TYPES) } });
    } catch (error) {
      throw new ConfigError(`metrics.prometheus: cannot serve metrics on ${address}: ${(error as Error).message}`);
    }
  }
  try {
    Runtime.install({ logger: workerLogger(level, logLine), ...(metrics ? { telemetryOptions: { metrics } } : {}) });
  } catch (error) {
    await endpoint?.close();
    throw error;
  }
  if (endpoint) process.stderr.write(`keel: metrics at http://${address}/metrics\n`);
}

/** `keel server`: the embedded dev server in the foreground. */
export async function runServer(config: KeelConfig): Promise<number> {
  const server = await startConfiguredServer(config, { stdio: 'inherit', command: 'keel server' });
  // Listening for SIGINT/SIGTERM before saying it is up: a signal sent on reading the line is never the default (a kill).
  const signalled = waitForSignal();
  process.stderr.write(`keel: Temporal dev server at ${server.address}${server.uiAddress ? `, UI ${server.uiAddress}` : ''} (Ctrl-C to stop)\n`);
  const stopped = server.exited.then(() => 'exited' as const);
  const outcome = await Promise.race([signalled, stopped]);
  if (outcome === 'exited') {
    process.stderr.write('keel: the Temporal dev server exited\n');
    return 1;
  }
  await server.stop();
  return 0;
}

/** Options of `runWorker` and `prepareWorker`. */
export interface WorkerRunOptions {
  /** Start even when the config registers no agents, tools or models (such a worker can only refuse calls). */
  allowEmpty?: boolean;
}

/** Options of `prepareWorker`. */
export interface PrepareWorkerOptions extends WorkerRunOptions {
  /** Called as each tool call's attempt starts on the worker. */
  onToolCallStart?: (call: ToolCallStart) => void;
  /** Writes the worker's log lines (stderr unless given), when this call installs the process's runtime. */
  logLine?: (line: string) => void;
}

/**
 * Refuses a worker that would register nothing: one started from the wrong directory, or on an
 * empty temporal.yaml, would poll the task queue and only refuse the calls it takes.
 */
export function assertNotEmpty(config: KeelConfig, registry: Registry, { allowEmpty = false }: WorkerRunOptions): void {
  if (allowEmpty || registry.agents.size || registry.tools.size || registry.models.size) return;
  const where = config.path ?? `${config.baseDir} (no temporal.yaml there)`;
  throw new ConfigError(
    `${where} registers no agents, tools or models (modules: ${config.modules.join(', ') || 'none'}, agents: ${config.agents.length || 'none'}); a worker on task queue "${config.taskQueue}" at ${config.temporal.address} would only refuse the calls it takes. Start it from your project's directory or pass --config <file>, or start it anyway with --allow-empty`,
  );
}

/** Creates (not runs) a worker for the config: modules loaded, connections made. */
export async function prepareWorker(
  config: KeelConfig,
  loaded?: Registry,
  options: PrepareWorkerOptions = {},
): Promise<{ worker: KeelWorker; agents: string[]; signingKeys: SigningKeys; close: () => Promise<void> }> {
  const registry = loaded ?? (await loadRegistry(config));
  assertNotEmpty(config, registry, options);
  await installRuntime(config, options.logLine);
  let connection: Awaited<ReturnType<typeof connectWithRetry>>;
  let client: Awaited<ReturnType<typeof connectClient>>;
  let worker: KeelWorker;
  let signingKeys: SigningKeys;
  try {
    signingKeys = loadSigningKeys(config);
    connection = await connectWithRetry(config);
    client = await connectClient(config);
    worker = await createKeelWorker({
      config,
      registry,
      connection,
      client,
      signingKeys,
      ...(options.onToolCallStart ? { onToolCallStart: options.onToolCallStart } : {}),
    });
  } catch (error) {
    await registry.close(); // an MCP server's process must not outlive a worker that never started
    throw error;
  }
  return {
    worker,
    agents: [...registry.agents.keys()].sort(),
    signingKeys,
    async close() {
      await registry.close();
      await connection.close();
      await client.connection.close();
    },
  };
}

/** First and longest wait between attempts to reach the server. */
const CONNECT_BACKOFF = { initialMs: 500, maxMs: 10_000 };

/**
 * Connects a worker, waiting for the server while it is down (a worker started during a
 * server restart or before the cluster is up): attempts back off from 0.5 s to 10 s, each
 * failure is reported on stderr, and SIGINT/SIGTERM give up (UNAVAILABLE).
 */
export async function connectWithRetry(config: KeelConfig, { backoff = CONNECT_BACKOFF, log = (line: string) => process.stderr.write(line) } = {}) {
  let delay = backoff.initialMs;
  for (let attempt = 1; ; attempt++) {
    try {
      const connection = await connectWorker(config);
      if (attempt > 1) log(`keel: reached Temporal at ${config.temporal.address} (attempt ${attempt})\n`);
      return connection;
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      // A server that answers, but not as configured: waiting will not fix it.
      const mismatch = await tlsMismatch(config);
      if (mismatch) throw mismatch;
      const reason = (error as Error).message.split('\n')[0];
      log(
        `keel: cannot reach Temporal at ${config.temporal.address} (attempt ${attempt}: ${reason}); retrying in ${(delay / 1000).toFixed(1)} s. Start one with \`npx keel server\`; Ctrl-C to stop.\n`,
      );
      const signal = await waitForSignal(delay);
      if (signal)
        throw new KeelError('UNAVAILABLE', `gave up reaching Temporal at ${config.temporal.address} after ${attempt} attempts (${signal}): ${reason}`);
      delay = Math.min(backoff.maxMs, delay * 2);
    }
  }
}

/** What `keel worker` logs as each tool call's attempt starts on it: which worker (its pid) runs which call. */
export const logToolCallStart = (call: ToolCallStart): void => void process.stderr.write(`${describeToolCallStart(call)}\n`);

/** Says on stderr that a worker is about to poll: a signing key it created, then its pid, task queue, address and agents. */
export function announceWorker(config: KeelConfig, { agents, signingKeys }: { agents: string[]; signingKeys: SigningKeys }): void {
  if (signingKeys.created) {
    process.stderr.write(
      `keel: created a signing key in ${signingKeys.source}; workers on other machines that run the same runs need the same key: set KEEL_SIGNING_KEY on every worker (docs/production.md, "Signing key")\n`,
    );
  }
  process.stderr.write(
    `keel: worker ${process.pid} on task queue "${config.taskQueue}" at ${config.temporal.address}${config.deployment ? `, build ${config.deployment.name}/${config.deployment.buildId}` : ''}; agents: ${agents.join(', ') || '(none)'}\n`,
  );
}

/** `keel worker`: one worker in the foreground; SIGINT/SIGTERM drain it gracefully. Each tool call it starts is logged with its pid. */
export async function runWorker(config: KeelConfig, options: WorkerRunOptions = {}): Promise<number> {
  const { worker, agents, signingKeys, close } = await prepareWorker(config, undefined, { ...options, onToolCallStart: logToolCallStart });
  announceWorker(config, { agents, signingKeys });
  try {
    await worker.run();
  } finally {
    await close();
  }
  return 0;
}

/** Starts the configured dev server unless a server already answers (its output ignored by default); returns it if started. */
export async function ensureServer(config: KeelConfig, { stdio = 'ignore', command }: ConfiguredServerOptions = {}): Promise<DevServer | undefined> {
  if (await isServerReachable(config.temporal.address!)) return undefined;
  if (!config.server.enabled) {
    throw new KeelError('UNAVAILABLE', `no Temporal server answers at ${config.temporal.address} and server.enabled is false in the config`);
  }
  return startConfiguredServer(config, { stdio, ...(command !== undefined ? { command } : {}) });
}

/**
 * What `keel dev` (or the demo) says of a server that already answered at the configured
 * address: whose it is, from the project's record of the servers keel started, and that keel
 * leaves it running.
 */
export function describeRunningServer(config: KeelConfig, command: string): string {
  const address = config.temporal.address!;
  const owner = describeServerOwner(config.baseDir, address);
  return owner.started
    ? `using the Temporal dev server at ${address} ${owner.phrase}; this ${command} leaves it running`
    : `using the Temporal server already running at ${address}, ${owner.phrase}; keel leaves it running`;
}
