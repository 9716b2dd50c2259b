/**
 * Connections to the Temporal service from the config: a client connection (runs,
 * queries) and a native connection (workers). Node side.
 */
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { KeelConfig } from '../config/schema';
import { keelDataConverter } from '../storage/data-converter';
import { tracingFromEnv } from '../telemetry/tracing';

type Connectable = Pick<KeelConfig, 'temporal' | 'baseDir'> & Partial<Pick<KeelConfig, 'externalStorage'>>;

function tlsOptions(config: Connectable): ConnectionOptions['tls'] {
  const tls = config.temporal.tls;
  if (tls === false) return undefined;
  if (tls === true) return true;
  const read = (path: string | undefined) => (path ? readFileSync(resolve(config.baseDir, path)) : undefined);
  const crt = read(tls.clientCertPath);
  const key = read(tls.clientKeyPath);
  return {
    serverNameOverride: tls.serverName,
    serverRootCACertificate: read(tls.serverRootCaCertPath),
    ...(crt && key ? { clientCertPair: { crt, key } } : {}),
  };
}

/** Connection options shared by both connection kinds. */
export function connectionOptions(config: Connectable): { address: string; tls: ConnectionOptions['tls']; apiKey?: string } {
  return { address: config.temporal.address!, tls: tlsOptions(config), ...(config.temporal.apiKey ? { apiKey: config.temporal.apiKey } : {}) };
}

/** A Temporal client for the configured namespace. */
export async function connectClient(config: Connectable, { connectTimeout = 10_000 }: { connectTimeout?: number } = {}): Promise<Client> {
  const connection = await Connection.connect({ ...connectionOptions(config), connectTimeout });
  // The same External Storage as the workers, so offloaded inputs, results and queries read back.
  const dataConverter = config.externalStorage ? await keelDataConverter({ externalStorage: config.externalStorage, baseDir: config.baseDir }) : undefined;
  const tracing = tracingFromEnv();
  return new Client({
    connection,
    namespace: config.temporal.namespace,
    ...(dataConverter ? { dataConverter } : {}),
    ...(tracing ? { interceptors: { workflow: tracing.clientInterceptors } } : {}),
  });
}

/** A native connection for workers. */
export async function connectWorker(config: Connectable): Promise<NativeConnection> {
  // Loaded here, not above: clients (the CLI's status, approve, ...) never need the worker's native bridge.
  const { NativeConnection } = await import('@temporalio/worker');
  return NativeConnection.connect(connectionOptions(config));
}
