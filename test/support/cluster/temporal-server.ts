/**
 * The Temporal server binary (go.temporal.io/server's cmd/server, built by
 * scripts/install-temporal-server.sh into .keel/bin) as a production cluster runs it, not the
 * dev server: PostgreSQL persistence (default and visibility stores, schema set up and updated
 * by temporal-sql-tool), every service (frontend, history, matching, worker) in one process on
 * free ports, mTLS on the frontend (client certificates required) and between the services, and
 * a dynamic config file. The server's YAML is written under `<dir>/config/cluster.yaml` and
 * started with `--root <dir> --env cluster` (as v1.29 needed; later versions take it too).
 */
import { Connection } from '@temporalio/client';
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { isPortInUse } from '../../../src/node/ports';
import { freePort } from '../free-port';
import type { ClusterCertificates } from './certificates';
import { startDaemon, type Daemon } from './daemon';
import type { Postgres } from './postgres';

const run = promisify(execFile);

/** The binaries and schema files of one server version, as the install script caches them. */
export interface ServerBinaries {
  server: string;
  sqlTool: string;
  /** `<dir>/postgresql/v12`, holding `temporal/versioned` and `visibility/versioned`. */
  postgresSchema: string;
}

/**
 * Builds (once) or finds the server binaries with the install script, which alone names the
 * version (TEMPORAL_SERVER_VERSION, else its default); its output goes to this process's stderr.
 */
export function installServerBinaries(root: string): ServerBinaries {
  const script = join(root, 'scripts', 'install-temporal-server.sh');
  const result = spawnSync('bash', [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const dir = result.stdout.trim().split('\n').pop();
  if (result.status !== 0 || !dir) throw new Error(`${script} failed (exit ${result.status}): see the messages above`);
  const server = join(dir, 'temporal-server');
  // "temporal version 1.31.2": the schema files cached beside it are that version's.
  const version = /version (\S+)/.exec(spawnSync(server, ['--version'], { encoding: 'utf8' }).stdout)?.[1];
  if (!version) throw new Error(`${server} --version did not say its version`);
  return {
    server,
    sqlTool: join(dir, 'temporal-sql-tool'),
    postgresSchema: join(dir, `temporal-server-schema-v${version}`, 'postgresql', 'v12'),
  };
}

/**
 * What keel relies on, stated rather than left to the server's defaults (which agree today):
 * updates (keel's resume, decide and steer), waiting on an update's acceptance, eager workflow
 * start, worker versioning. Update-with-start (sessions) needs no key since v1.31.
 */
export const KEEL_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = {
  'frontend.enableUpdateWorkflowExecution': true,
  'frontend.enableUpdateWorkflowExecutionAsyncAccepted': true,
  'system.enableEagerWorkflowStart': true,
  'frontend.workerVersioningWorkflowAPIs': true,
  'system.enableDeploymentVersions': true,
};

/** The mTLS settings a keel process (and the temporal CLI) connects with. */
export interface ClientTls {
  serverName: string;
  serverRootCaCertPath: string;
  clientCertPath: string;
  clientKeyPath: string;
}

/** A running Temporal server. */
export interface TemporalServer {
  /** The frontend's host:port (mTLS). */
  address: string;
  tls: ClientTls;
  /** Stops the server process (SIGTERM, its graceful shutdown). */
  stop: () => Promise<void>;
  /** Starts it again with the same config, ports and database. */
  start: () => Promise<void>;
  /** The end of its log. */
  tail: () => string;
  /** The pid of the server process now running. */
  pid: () => number | undefined;
}

/** Options of `startTemporalServer`. */
export interface TemporalServerOptions {
  binaries: ServerBinaries;
  postgres: Postgres;
  certificates: ClusterCertificates;
  /** Its own directory: config, dynamic config and log. */
  dir: string;
  readyTimeoutMs?: number;
}

async function sqlTool(binaries: ServerBinaries, postgres: Postgres, database: string, args: string[]): Promise<void> {
  const connection = [
    '--plugin',
    'postgres12',
    '--ep',
    postgres.host,
    '-p',
    String(postgres.port),
    '-u',
    postgres.user,
    '--pw',
    postgres.password,
    '--db',
    database,
  ];
  try {
    await run(binaries.sqlTool, [...connection, ...args]);
  } catch (error) {
    const failed = error as { stderr?: string; stdout?: string; message: string };
    throw new Error(`temporal-sql-tool --db ${database} ${args.join(' ')} failed: ${failed.stderr || failed.stdout || failed.message}`);
  }
}

/** Creates the `temporal` and `temporal_visibility` databases and brings their schemas to the binary's version. */
export async function setUpSchemas(binaries: ServerBinaries, postgres: Postgres): Promise<void> {
  await Promise.all(
    [
      { database: 'temporal', schema: 'temporal' },
      { database: 'temporal_visibility', schema: 'visibility' },
    ].map(async ({ database, schema }) => {
      await sqlTool(binaries, postgres, database, ['create-database']);
      await sqlTool(binaries, postgres, database, ['setup-schema', '-v', '0.0']);
      await sqlTool(binaries, postgres, database, ['update-schema', '-d', join(binaries.postgresSchema, schema, 'versioned')]);
    }),
  );
}

/** The server's static config (modelled on the server's own config/development-postgres12.yaml). */
function serverConfig({
  postgres,
  certificates,
  ports,
  dynamicConfigFile,
}: {
  postgres: Postgres;
  certificates: ClusterCertificates;
  ports: Record<
    'frontend' | 'frontendHttp' | 'frontendMembership' | 'history' | 'historyMembership' | 'matching' | 'matchingMembership' | 'worker' | 'workerMembership',
    number
  >;
  dynamicConfigFile: string;
}): Record<string, unknown> {
  const store = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${postgres.host}:${postgres.port}`,
      connectProtocol: 'tcp',
      user: postgres.user,
      password: postgres.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (grpcPort: number, membershipPort: number, extra: Record<string, unknown> = {}) => ({
    rpc: { grpcPort, membershipPort, bindOnLocalHost: true, ...extra },
  });
  const trustedBy = { serverName: 'localhost', rootCaFiles: [certificates.caCert] };
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: 4,
      datastores: { 'postgres-default': store('temporal', 20), 'postgres-visibility': store('temporal_visibility', 4) },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      tls: {
        // Between history, matching and the frontend: each presents the server certificate and requires the others' (mTLS).
        internode: {
          server: { certFile: certificates.serverCert, keyFile: certificates.serverKey, requireClientAuth: true, clientCaFiles: [certificates.caCert] },
          client: trustedBy,
        },
        // What keel's processes reach: a client certificate signed by the lane's CA is required.
        frontend: {
          server: { certFile: certificates.serverCert, keyFile: certificates.serverKey, requireClientAuth: true, clientCaFiles: [certificates.caCert] },
          client: trustedBy,
        },
        // The server's own system workers (scheduler, batcher, deployments) are clients of the frontend too.
        systemWorker: { certFile: certificates.clientCert, keyFile: certificates.clientKey, client: trustedBy },
      },
    },
    services: {
      frontend: service(ports.frontend, ports.frontendMembership, { httpPort: ports.frontendHttp }),
      history: service(ports.history, ports.historyMembership),
      matching: service(ports.matching, ports.matchingMembership),
      worker: service(ports.worker, ports.workerMembership),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `127.0.0.1:${ports.frontend}` } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: dynamicConfigFile, pollInterval: '10s' },
  };
}

/**
 * A free loopback port below 32768 for a service's membership (ringpop) listener: the server
 * records it in cluster_membership's `rpc_port`, a PostgreSQL smallint, so a port from the
 * kernel's ephemeral range (32768 and up, what `freePort` gets) fails the server's start.
 */
async function freeMembershipPort(taken: number[]): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!taken.includes(port) && !(await isPortInUse({ ip: '127.0.0.1', port }))) return port;
  }
  throw new Error('no free port between 20000 and 32000 for a membership listener');
}

/** Asks the frontend for its system info over mTLS; throws when it does not answer. */
async function probe(address: string, tls: ClientTls): Promise<void> {
  const connection = await Connection.connect({
    address,
    connectTimeout: 3000,
    tls: {
      serverNameOverride: tls.serverName,
      serverRootCACertificate: readFileSync(tls.serverRootCaCertPath),
      clientCertPair: { crt: readFileSync(tls.clientCertPath), key: readFileSync(tls.clientKeyPath) },
    },
  });
  try {
    await connection.workflowService.getSystemInfo({});
  } finally {
    await connection.close();
  }
}

/** Writes the server's config, sets up the schemas, starts the server and waits for its frontend to answer over mTLS. */
export async function startTemporalServer({ binaries, postgres, certificates, dir, readyTimeoutMs = 90_000 }: TemporalServerOptions): Promise<TemporalServer> {
  const configDir = join(dir, 'config');
  mkdirSync(configDir, { recursive: true });
  const names = [
    'frontend',
    'frontendHttp',
    'frontendMembership',
    'history',
    'historyMembership',
    'matching',
    'matchingMembership',
    'worker',
    'workerMembership',
  ] as const;
  const ports = {} as Record<(typeof names)[number], number>;
  for (const name of names) ports[name] = name.endsWith('Membership') ? await freeMembershipPort(Object.values(ports)) : await freePort();
  const dynamicConfigFile = join(dir, 'dynamic-config.yaml');
  writeFileSync(dynamicConfigFile, stringify(Object.fromEntries(Object.entries(KEEL_DYNAMIC_CONFIG).map(([key, value]) => [key, [{ value }]]))));
  // The server only warns, at start and in a log line, about a key it does not know: a misspelt or retired key fails here.
  const validated = await run(binaries.server, ['validate-dynamic-config', dynamicConfigFile]);
  const complaints = `${validated.stdout}${validated.stderr}`.split('\n').filter((line) => /warning|error/i.test(line));
  if (complaints.length) throw new Error(`the dynamic config ${dynamicConfigFile} does not validate:\n${complaints.join('\n')}`);
  writeFileSync(join(configDir, 'cluster.yaml'), stringify(serverConfig({ postgres, certificates, ports, dynamicConfigFile })));
  await setUpSchemas(binaries, postgres);

  const address = `127.0.0.1:${ports.frontend}`;
  const tls: ClientTls = {
    serverName: 'localhost',
    serverRootCaCertPath: certificates.caCert,
    clientCertPath: certificates.clientCert,
    clientKeyPath: certificates.clientKey,
  };
  const log = join(dir, 'temporal-server.log');
  let server: Daemon | undefined;
  const start = async () => {
    // No authorizer: mTLS authenticates every caller; --allow-no-auth says that is meant.
    server = startDaemon({
      command: binaries.server,
      args: ['--root', resolve(dir), '--config', 'config', '--env', 'cluster', '--allow-no-auth', 'start'],
      log,
    });
    const deadline = Date.now() + readyTimeoutMs;
    let lastError: unknown;
    for (;;) {
      if (!server.alive()) throw new Error(`temporal-server exited before it answered:\n${server.tail()}`);
      try {
        return await probe(address, tls);
      } catch (error) {
        lastError = error;
      }
      if (Date.now() > deadline)
        throw new Error(`temporal-server did not answer at ${address} within ${readyTimeoutMs} ms (${(lastError as Error).message}):\n${server.tail()}`);
      await new Promise((settle) => setTimeout(settle, 500));
    }
  };
  await start();
  return {
    address,
    tls,
    start,
    stop: async () => server?.stop({ signal: 'SIGTERM', graceMs: 30_000 }),
    tail: () => server?.tail() ?? '',
    pid: () => server?.child.pid,
  };
}
