/**
 * A worker process of `keel dev`: `keel worker` started with KEEL_DEV_WORKER and an IPC channel.
 * It warms up first (keel's modules, Temporal's worker, connections, and a Worker created for
 * the config as it reads now, on an empty registry), says `standby` and waits. Told to `start`,
 * it reads the config again and loads the project's modules into that registry: the process is
 * new, so no module of the project was loaded before, and the new code is what runs. Then it
 * polls and says so, with the project files it loaded (keel dev watches them). When the config
 * changed what the Worker was made from (connection, task queue, worker options, the workflow
 * bundle), it says `cold` and exits, for keel dev to start a process warmed on the new config.
 * A failure to load is said in one line naming the file, and the process exits: keel dev keeps
 * its last good worker. Node side.
 */
import type { KeelWorker } from '../worker/create-worker';
import { resolve, sep } from 'node:path';
import { ConfigError, loadConfig } from '../config/load';
import type { KeelConfig } from '../config/schema';
import { requireModule } from '../node/require-ts';
import { Registry } from '../registry';
import type { SigningKeys } from '../security/signing-keys';
import { loadFailureLine } from './load-failure';
import { StartMessageSchema, type WorkerMessage } from './dev-protocol';

/** Options of `runDevWorker`: the worker command's own. */
export interface DevWorkerOptions {
  /** `--config`, if given. */
  configPath?: string;
  allowEmpty: boolean;
}

/** A Worker made ahead of `start`, on an empty registry, and what it was made from. */
interface WarmWorker {
  key: string;
  registry: Registry;
  worker: KeelWorker;
  signingKeys: SigningKeys;
  close: () => Promise<void>;
}

type Processes = typeof import('../ops/processes');

/** A module of keel, loaded on demand (the worker's are slow to load: that is what warming up is for). */
function keelModule<T>(specifier: string): T {
  return requireModule<T>(specifier, __filename);
}

function send(message: WorkerMessage): void {
  if (process.connected) process.send?.(message);
}

/**
 * What a Worker is made from, besides the registry: the config less what only the registry
 * reads (modules, agents, models, MCP servers) or only the server does, and the workflow
 * bundle's hash (the middleware modules' sources).
 */
function workerKey(config: KeelConfig): string {
  const { modules: _modules, agents: _agents, models: _models, mcpServers: _mcpServers, server: _server, path: _path, ...made } = config;
  const { bundleHash } = keelModule<typeof import('../worker/bundle')>('../worker/bundle');
  return `${JSON.stringify(made)} ${bundleHash(config.middlewareModules.map((module) => resolve(config.baseDir, module)))}`;
}

/** Loads what every worker needs and, when the config reads and the server answers, makes the Worker; never throws. */
async function warmUp(options: DevWorkerOptions): Promise<WarmWorker | undefined> {
  const processes = keelModule<Processes>('../ops/processes');
  // What the project's modules import from keel (the same files, as `keel-agents` resolves to this package).
  for (const entry of ['../index', '../features/index', '../testing']) keelModule(entry);
  let config: KeelConfig;
  try {
    config = loadConfig({ path: options.configPath, explicit: options.configPath !== undefined });
  } catch {
    return undefined; // read again at start, and said then
  }
  const { connectClient, connectWorker } = keelModule<typeof import('../worker/connect')>('../worker/connect');
  const { createKeelWorker } = keelModule<typeof import('../worker/create-worker')>('../worker/create-worker');
  const { loadSigningKeys } = keelModule<typeof import('../security/signing-keys')>('../security/signing-keys');
  const closers: Array<() => Promise<void>> = [];
  try {
    await processes.installRuntime(config);
    const registry = new Registry();
    closers.push(() => registry.close());
    const signingKeys = loadSigningKeys(config);
    // No retries here: a server that does not answer now is waited for at start, saying so.
    const connection = await connectWorker(config);
    closers.push(() => connection.close());
    const client = await connectClient(config);
    closers.push(() => client.connection.close());
    const worker = await createKeelWorker({ config, registry, connection, client, signingKeys, onToolCallStart: processes.logToolCallStart });
    const close = async () => {
      for (const closer of closers.reverse()) await closer();
    };
    return { key: workerKey(config), registry, worker, signingKeys, close };
  } catch {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
    return undefined;
  }
}

/**
 * Resolves when keel dev says `start`. Told to stop before that (SIGINT, SIGTERM, keel dev gone),
 * the process ends at once, warm or still warming: it has nothing to drain.
 */
function started(): Promise<void> {
  return new Promise((resolveStart) => {
    const finish = () => {
      process.off('message', onMessage);
      process.off('SIGINT', onStop);
      process.off('SIGTERM', onStop);
      process.off('disconnect', onStop);
      resolveStart();
    };
    const onMessage = (message: unknown) => {
      if (StartMessageSchema.safeParse(message).success) finish();
    };
    const onStop = () => endUnused(0);
    process.on('message', onMessage);
    process.on('SIGINT', onStop);
    process.on('SIGTERM', onStop);
    process.on('disconnect', onStop);
  });
}

/** The project's files among those loaded since `before`: not keel's, not under node_modules, .keel or dist. */
function projectFiles(config: KeelConfig, before: ReadonlySet<string>): string[] {
  const root = config.baseDir.endsWith(sep) ? config.baseDir : `${config.baseDir}${sep}`;
  const excluded = ['node_modules', '.keel', 'dist'].map((name) => `${sep}${name}${sep}`);
  return Object.keys(require.cache).filter(
    (file) => !before.has(file) && file.startsWith(root) && !excluded.some((part) => file.slice(root.length - 1).includes(part)),
  );
}

/** What keel dev watches for this worker: the config file, the modules it lists, and the project files they loaded. */
function watchList(options: DevWorkerOptions, config: KeelConfig | undefined, before: ReadonlySet<string>, extra?: string): string[] {
  const configFile = resolve(options.configPath ?? 'temporal.yaml');
  const listed = config ? [...config.modules, ...config.middlewareModules].map((module) => resolve(config.baseDir, module)) : [];
  return [...new Set([configFile, ...listed, ...(config ? projectFiles(config, before) : []), ...(extra ? [extra] : [])])];
}

/** A prepared worker: the warm one when it still fits the config, else undefined (the process must start again warmed on the new config). */
async function fromWarm(config: KeelConfig, warm: WarmWorker, options: DevWorkerOptions) {
  if (warm.key !== workerKey(config)) return undefined;
  const { loadRegistry } = keelModule<typeof import('../worker/load-registry')>('../worker/load-registry');
  const processes = keelModule<Processes>('../ops/processes');
  await loadRegistry(config, warm.registry);
  processes.assertNotEmpty(config, warm.registry, options);
  return { worker: warm.worker, agents: [...warm.registry.agents.keys()].sort(), signingKeys: warm.signingKeys, close: warm.close };
}

/** Runs a worker process of keel dev until it is told to stop (SIGTERM: it drains) or keel dev is gone; resolves to the exit code. */
export async function runDevWorker(options: DevWorkerOptions): Promise<number> {
  try {
    return await serve(options);
  } finally {
    // The IPC channel would keep the process alive.
    if (process.connected) process.disconnect();
  }
}

/**
 * Ends a process whose warm Worker never ran: such a Worker cannot be shut down (the SDK stops
 * only running ones) and keeps its connection open, and there is nothing to drain.
 */
function endUnused(code: number): never {
  if (process.connected) process.disconnect();
  process.exit(code);
}

async function serve(options: DevWorkerOptions): Promise<number> {
  const go = started();
  const warm = await warmUp(options);
  send({ type: 'standby' });
  await go;
  const processes = keelModule<Processes>('../ops/processes');
  const before = new Set(Object.keys(require.cache));
  let config: KeelConfig | undefined;
  let prepared: Awaited<ReturnType<Processes['prepareWorker']>> | undefined;
  try {
    config = loadConfig({ path: options.configPath, explicit: options.configPath !== undefined });
    if (warm) {
      prepared = await fromWarm(config, warm, options);
      if (!prepared) {
        send({ type: 'cold' });
        endUnused(0);
      }
    } else {
      prepared = await processes.prepareWorker(config, undefined, { allowEmpty: options.allowEmpty, onToolCallStart: processes.logToolCallStart });
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const { line, file } = loadFailureLine(message);
    const usage = error instanceof ConfigError;
    send({ type: 'failed', line, message, usage, watch: watchList(options, config, before, file) });
    // What it opened before failing (a connection, a warm Worker) must not keep it alive.
    endUnused(usage ? 2 : 1);
  }
  processes.announceWorker(config, prepared);
  const running = prepared.worker.run();
  // The SDK drains on the first SIGINT/SIGTERM and then stops listening, so a second (Ctrl-C reaches this process and keel
  // dev, which sends SIGTERM) would kill it mid-drain: keel dev alone decides when to stop waiting (SIGKILL).
  const ignore = () => undefined;
  process.on('SIGINT', ignore);
  process.on('SIGTERM', ignore);
  send({ type: 'polling', watch: watchList(options, config, before) });
  // Where the kernel does not end this process with keel dev (no setpriv), the closed channel does.
  const worker = prepared.worker;
  process.once('disconnect', () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
  });
  try {
    await running;
  } finally {
    await prepared.close();
  }
  return 0;
}
