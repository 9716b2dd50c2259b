/**
 * Connections to the Temporal service from the config: a client connection (runs,
 * queries) and a native connection (workers). Node side.
 */
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { ConfigError } from '../config/load';
import { KeelError } from '../core/errors';
import { connectionRefusal } from '../node/ports';
import { resolve } from 'node:path';
import type { KeelConfig } from '../config/schema';
import { keelDataConverter } from '../storage/data-converter';
import { tracingFromEnv } from '../telemetry/tracing';

type Connectable = Pick<KeelConfig, 'temporal' | 'baseDir'> & Partial<Pick<KeelConfig, 'externalStorage' | 'encryption'>>;

function tlsOptions(config: Connectable): ConnectionOptions['tls'] {
  const tls = config.temporal.tls;
  if (tls === false) return undefined;
  if (tls === true) return true;
  // A certificate file that cannot be read is a config error naming the field and the file, not "cannot reach Temporal".
  const read = (field: keyof typeof tls, path: string | undefined) => {
    if (!path) return undefined;
    const file = resolve(config.baseDir, path);
    try {
      return readFileSync(file);
    } catch (error) {
      throw new ConfigError(`temporal.tls.${field}: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  };
  const crt = read('clientCertPath', tls.clientCertPath);
  const key = read('clientKeyPath', tls.clientKeyPath);
  if ((tls.clientCertPath === undefined) !== (tls.clientKeyPath === undefined))
    throw new ConfigError('temporal.tls: give both clientCertPath and clientKeyPath (mTLS), or neither');
  return {
    serverNameOverride: tls.serverName,
    serverRootCACertificate: read('serverRootCaCertPath', tls.serverRootCaCertPath),
    ...(crt && key ? { clientCertPair: { crt, key } } : {}),
  };
}

/** Connection options shared by both connection kinds. */
export function connectionOptions(config: Connectable): { address: string; tls: ConnectionOptions['tls']; apiKey?: string } {
  return { address: config.temporal.address!, tls: tlsOptions(config), ...(config.temporal.apiKey ? { apiKey: config.temporal.apiKey } : {}) };
}

/** What a port answers, probed when a connection fails: nothing, a TLS server, or something that speaks no TLS. */
export async function probeTls(address: string, timeoutMs = 3000): Promise<'refused' | 'tls' | 'plaintext' | 'unknown'> {
  const separator = address.lastIndexOf(':');
  const host = address.slice(0, separator).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(separator + 1));
  if (!host || !Number.isInteger(port)) return 'unknown';
  return new Promise((settle) => {
    const socket = tlsConnect({ host, port, rejectUnauthorized: false, ...(isIP(host) ? {} : { servername: host }), ALPNProtocols: ['h2'] });
    const done = (answer: 'refused' | 'tls' | 'plaintext' | 'unknown') => {
      clearTimeout(timer);
      socket.destroy();
      settle(answer);
    };
    const timer = setTimeout(() => done('unknown'), timeoutMs);
    socket.once('secureConnect', () => done('tls'));
    socket.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED') return done('refused');
      // The peer answered, but not with a TLS handshake (or closed on it): it speaks something else.
      done(
        /wrong version number|packet length too long|unknown protocol|ECONNRESET|socket disconnected|EPROTO/i.test(`${error.code} ${error.message}`)
          ? 'plaintext'
          : 'unknown',
      );
    });
  });
}

/**
 * Why a connection to the configured server failed, when it is the config's fault: TLS on for a
 * server without TLS, or off for one that speaks only TLS (a ConfigError saying which and how to
 * fix it); undefined when the probe finds nothing that clear.
 */
export async function tlsMismatch(config: Connectable): Promise<ConfigError | undefined> {
  const address = config.temporal.address!;
  const tlsOn = config.temporal.tls !== false;
  const answer = await probeTls(address);
  if (tlsOn && answer === 'plaintext')
    return new ConfigError(
      `temporal.tls is on, but ${address} answers without TLS: set temporal.tls: false (or TEMPORAL_TLS=false), or give the address of the server's TLS port`,
    );
  if (!tlsOn && answer === 'tls')
    return new ConfigError(
      `${address} speaks TLS, but temporal.tls is off: set temporal.tls: true (or TEMPORAL_TLS=true; with certificate files, temporal.tls: { ... })`,
    );
  return undefined;
}

/** The proxy variables gRPC honours: with one set, a connection goes through the proxy, not straight to the address. */
const PROXY_VARIABLES = ['grpc_proxy', 'https_proxy', 'http_proxy'];

/**
 * Why nothing can be reached at Temporal's `address`, when that is known at once (the gRPC
 * client retries a refused address until its connect timeout, 10 s and more): undefined when a
 * connection is made or not made in `timeoutMs`, and when a proxy variable is set (gRPC goes
 * through the proxy, so a direct probe says nothing).
 */
export async function temporalRefusal(address: string, timeoutMs: number, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  if (PROXY_VARIABLES.some((name) => env[name] || env[name.toUpperCase()])) return undefined;
  return connectionRefusal(address, timeoutMs);
}

/** A Temporal client for the configured namespace. */
export async function connectClient(
  config: Connectable,
  { connectTimeout = 10_000, identity }: { connectTimeout?: number; identity?: string } = {},
): Promise<Client> {
  const options = connectionOptions(config);
  const refused = await temporalRefusal(options.address, Math.min(connectTimeout, 2000));
  if (refused) throw new KeelError('UNAVAILABLE', `cannot reach Temporal at ${options.address}: ${refused}`);
  const connection = await Connection.connect({ ...options, connectTimeout });
  // The same encryption and External Storage as the workers, so sealed or offloaded inputs, results and queries read back.
  const dataConverter = config.externalStorage
    ? await keelDataConverter({ externalStorage: config.externalStorage, encryption: config.encryption, baseDir: config.baseDir })
    : undefined;
  const tracing = tracingFromEnv();
  return new Client({
    connection,
    namespace: config.temporal.namespace,
    ...(identity !== undefined ? { identity } : {}),
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
