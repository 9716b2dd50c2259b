/**
 * The long-running commands: `keel server`, `keel worker`, `keel dev`. Each runs in the
 * foreground until SIGINT/SIGTERM and then stops cleanly. Node side.
 */
import { DefaultLogger, Runtime, type Worker } from '@temporalio/worker';
import type { KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import { isServerReachable, startConfiguredServer, type DevServer } from '../server/dev-server';
import { connectClient, connectWorker } from '../worker/connect';
import { createKeelWorker } from '../worker/create-worker';
import { loadRegistry } from '../worker/load-registry';

let runtimeInstalled = false;

const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'] as const;

/** Installs the SDK runtime once, logging at $KEEL_LOG_LEVEL (default WARN). */
export function installRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const wanted = (process.env.KEEL_LOG_LEVEL ?? 'WARN').toUpperCase();
  const level = (LOG_LEVELS as readonly string[]).includes(wanted) ? (wanted as (typeof LOG_LEVELS)[number]) : 'WARN';
  if (level !== wanted) process.stderr.write(`keel: KEEL_LOG_LEVEL=${process.env.KEEL_LOG_LEVEL} is not one of ${LOG_LEVELS.join(', ')}; using WARN\n`);
  Runtime.install({ logger: new DefaultLogger(level) });
}

function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const handler = (signal: NodeJS.Signals) => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
      resolve(signal);
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
}

/** `keel server`: the embedded dev server in the foreground. */
export async function runServer(config: KeelConfig): Promise<number> {
  const server = await startConfiguredServer(config, { stdio: 'inherit' });
  process.stderr.write(`keel: Temporal dev server at ${server.address}${server.uiAddress ? `, UI ${server.uiAddress}` : ''} (Ctrl-C to stop)\n`);
  const stopped = new Promise<'exited'>((resolve) => server.process.once('exit', () => resolve('exited')));
  const outcome = await Promise.race([waitForSignal(), stopped]);
  if (outcome === 'exited') {
    process.stderr.write('keel: the Temporal dev server exited\n');
    return 1;
  }
  await server.stop();
  return 0;
}

/** Creates (not runs) a worker for the config: modules loaded, connections made. */
export async function prepareWorker(config: KeelConfig): Promise<{ worker: Worker; agents: string[]; close: () => Promise<void> }> {
  const registry = await loadRegistry(config);
  installRuntime();
  let connection;
  try {
    connection = await connectWorker(config);
  } catch (error) {
    throw new KeelError('UNAVAILABLE', `cannot reach Temporal at ${config.temporal.address}: ${(error as Error).message}. Start one with \`npx keel server\`.`);
  }
  const client = await connectClient(config);
  const worker = await createKeelWorker({ config, registry, connection, client });
  return {
    worker,
    agents: [...registry.agents.keys()].sort(),
    async close() {
      await connection.close();
      await client.connection.close();
    },
  };
}

/** `keel worker`: one worker in the foreground; SIGINT/SIGTERM drain it gracefully. */
export async function runWorker(config: KeelConfig): Promise<number> {
  const { worker, agents, close } = await prepareWorker(config);
  process.stderr.write(`keel: worker ${process.pid} on task queue "${config.taskQueue}" at ${config.temporal.address}; agents: ${agents.join(', ') || '(none)'}\n`);
  try {
    await worker.run();
  } finally {
    await close();
  }
  return 0;
}

/** Starts the configured dev server unless a server already answers; returns it if started. */
export async function ensureServer(config: KeelConfig, { stdio = 'ignore' }: { stdio?: 'inherit' | 'ignore' } = {}): Promise<DevServer | undefined> {
  if (await isServerReachable(config.temporal.address!)) return undefined;
  if (!config.server.enabled) {
    throw new KeelError('UNAVAILABLE', `no Temporal server answers at ${config.temporal.address} and server.enabled is false in the config`);
  }
  return startConfiguredServer(config, { stdio });
}

/** `keel dev`: dev server (unless one is reachable) plus one worker. */
export async function runDev(config: KeelConfig): Promise<number> {
  const server = await ensureServer(config);
  if (server) process.stderr.write(`keel: Temporal dev server at ${server.address}${server.uiAddress ? `, UI ${server.uiAddress}` : ''}\n`);
  try {
    return await runWorker(config);
  } finally {
    await server?.stop();
  }
}
