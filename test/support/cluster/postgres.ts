/**
 * A PostgreSQL of the cluster lane's own: Debian's binaries (/usr/lib/postgresql/<n>/bin, or
 * $KEEL_POSTGRES_BIN), a data directory made by initdb in the test's temp dir, a free port on
 * 127.0.0.1, password authentication for TCP. PostgreSQL refuses to run as root, so as root it
 * runs as the `postgres` user Debian's package creates, owning the data directory.
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../free-port';
import { startDaemon, type Daemon } from './daemon';

const run = promisify(execFile);

/** A running PostgreSQL. */
export interface Postgres {
  host: string;
  port: number;
  user: string;
  password: string;
  /** Stops it (fast shutdown) and starts it again on the same port and data. */
  restart: () => Promise<void>;
  stop: () => Promise<void>;
}

/** The directory of Debian's PostgreSQL binaries: $KEEL_POSTGRES_BIN, else the newest /usr/lib/postgresql/<n>/bin. */
export function postgresBinDir(): string {
  const given = process.env.KEEL_POSTGRES_BIN;
  if (given) return given;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => existsSync(join(root, name, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions[0]) throw new Error(`no PostgreSQL under ${root}: install Debian's postgresql package (apt-get install postgresql), or set KEEL_POSTGRES_BIN`);
  return join(root, versions[0], 'bin');
}

/** Who runs PostgreSQL: this process, or (as root) the `postgres` user. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === 'postgres');
  if (!entry) throw new Error('PostgreSQL refuses to run as root, and there is no postgres user to run it as (Debian’s postgresql package creates one)');
  return { uid: Number(entry[2]), gid: Number(entry[3]) };
}

/** Options of `startPostgres`. */
export interface PostgresOptions {
  /** Its own directory (the data directory and log go here); must not exist yet. */
  dir: string;
  user?: string;
  password?: string;
}

/** initdb, then starts the server and waits until it accepts connections. */
export async function startPostgres({ dir, user = 'temporal', password = 'temporal' }: PostgresOptions): Promise<Postgres> {
  const bin = postgresBinDir();
  const owner = serverUser();
  const data = join(dir, 'data');
  mkdirSync(dir, { mode: 0o755 });
  mkdirSync(data, { mode: 0o700 });
  const passwordFile = join(dir, 'password');
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  if (owner) {
    chownSync(data, owner.uid, owner.gid);
    chownSync(passwordFile, owner.uid, owner.gid);
  }
  const initdb = startDaemon({
    command: join(bin, 'initdb'),
    args: ['-D', data, '-U', user, `--pwfile=${passwordFile}`, '--auth-local=trust', '--auth-host=scram-sha-256', '-E', 'UTF8', '--no-sync'],
    log: join(dir, 'initdb.log'),
    ...(owner ? { user: owner } : {}),
  });
  if ((await initdb.exited) !== 0) throw new Error(`initdb failed:\n${initdb.tail()}`);
  const port = await freePort();
  const host = '127.0.0.1';
  // A test database: durability settings off (the lane restarts it cleanly, never after a crash).
  const args = ['-D', data, '-p', String(port), '-h', host, '-k', data, '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'];
  let server: Daemon;
  const start = async () => {
    server = startDaemon({ command: join(bin, 'postgres'), args, log: join(dir, 'postgres.log'), ...(owner ? { user: owner } : {}) });
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (!server.alive()) throw new Error(`postgres exited before accepting connections:\n${server.tail()}`);
      const ready = await run(join(bin, 'pg_isready'), ['-h', host, '-p', String(port), '-t', '2']).then(
        () => true,
        () => false,
      );
      if (ready) return;
      if (Date.now() > deadline) throw new Error(`postgres did not accept connections on ${host}:${port} within 30 s:\n${server.tail()}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  // SIGINT is PostgreSQL's fast shutdown: clients are disconnected, the data is written out.
  const stop = () => server.stop({ signal: 'SIGINT', graceMs: 15_000 });
  await start();
  return {
    host,
    port,
    user,
    password,
    stop,
    async restart() {
      await stop();
      await start();
    },
  };
}
