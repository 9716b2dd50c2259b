/**
 * The cluster lane's Temporal (docs/production.md, "A production-shaped Temporal"): certificates, a
 * PostgreSQL and the Temporal server binary, all in one temp dir, started by `startCluster` and
 * stopped, with every process they started, by `stop`. `restart` stops the server processes and
 * starts them again (Temporal, then PostgreSQL under it), keeping ports and data.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCertificates, type ClusterCertificates } from './certificates';
import { startPostgres, type Postgres } from './postgres';
import { startTemporalServer, type ClientTls, type ServerBinaries, type TemporalServer } from './temporal-server';

export { installServerBinaries, KEEL_DYNAMIC_CONFIG, type ClientTls, type ServerBinaries } from './temporal-server';
export type { ClusterCertificates } from './certificates';

/** A running cluster. */
export interface Cluster {
  /** The temp dir holding everything (removed by `stop` unless KEEL_KEEP_CLUSTER is set). */
  dir: string;
  /** The frontend's host:port. */
  address: string;
  /** What keel's processes connect with (temporal.tls). */
  tls: ClientTls;
  certificates: ClusterCertificates;
  postgres: Postgres;
  server: TemporalServer;
  /** Stops the Temporal server and PostgreSQL, starts PostgreSQL and then the server again. */
  restart: () => Promise<void>;
  stop: () => Promise<void>;
}

/** Starts PostgreSQL and the Temporal server with mTLS; `binaries` from `installServerBinaries`. */
export async function startCluster({ binaries }: { binaries: ServerBinaries }): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'keel-cluster-'));
  // PostgreSQL runs as another user (as root): it must be able to reach its directory below this one.
  chmodSync(dir, 0o755);
  let postgres: Postgres | undefined;
  let server: TemporalServer | undefined;
  const stop = async () => {
    await server?.stop();
    await postgres?.stop();
    if (!process.env.KEEL_KEEP_CLUSTER) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const certificates = await makeCertificates(join(dir, 'certs'));
    postgres = await startPostgres({ dir: join(dir, 'postgres') });
    server = await startTemporalServer({ binaries, postgres, certificates, dir: join(dir, 'temporal') });
    const started = { postgres, server };
    return {
      dir,
      address: server.address,
      tls: server.tls,
      certificates,
      postgres,
      server,
      stop,
      async restart() {
        await started.server.stop();
        await started.postgres.restart();
        await started.server.start();
      },
    };
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}
