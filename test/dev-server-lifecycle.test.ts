/**
 * The life of the dev server `keel server` and `keel dev` start, as a user meets it: a
 * `server.dbFile` where no directory can be made fails at once with exit 2 (it used to spin at
 * full CPU, silent); the `temporal` process dies with a SIGKILLed keel and frees its port; and a
 * server already running is named with whose it is: the keel process and project that started it
 * (from the project's .keel/dev-servers.json, while that process lives), or not keel from this
 * project.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { isServerReachable } from '../src/server/dev-server';
import { serverOwnersPath, type ServerOwnersFile } from '../src/server/server-owner';
import { freePort } from './support/free-port';
import { killAfterEach, spawnKeel, type KeelProcess } from './support/processes';

const track = killAfterEach(afterEach);

/** Pids of `temporal` processes a test saw, killed after it in case keel left them (this hook runs before track's, which waits for their output pipes to close). */
const temporalPids: number[] = [];
afterEach(() => {
  for (const pid of temporalPids.splice(0)) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
});

/** A temporal.yaml in a new temp dir with the given `server` fields (the test binary, free ports unless given). */
async function writeConfig(server: Record<string, unknown>, extra: object = {}): Promise<{ path: string; port: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'keel-lifecycle-'));
  const path = join(dir, 'temporal.yaml');
  const fields = { port: await freePort(), uiPort: await freePort(), dbFile: 'server.db', binary: inject('temporalBinary'), ...server };
  writeFileSync(path, stringify({ taskQueue: `lifecycle-${Date.now()}`, server: fields, ...extra }));
  return { path, port: fields.port };
}

/** The exit code of `keel`, or 'still running' when it has not exited within `ms` (afterEach kills it). */
async function exitWithin(keel: KeelProcess, ms: number): Promise<number | null | 'still running'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), ms)));
  const outcome = await Promise.race([keel.exited, late]);
  clearTimeout(timer);
  return outcome;
}

/** True while `pid` is a live process (a zombie waiting to be reaped counts as gone). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // The state follows the parenthesised command name in /proc/<pid>/stat.
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The pids of the `temporal` processes whose parent is `parent`, from /proc. */
function temporalChildrenOf(parent: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [command, rest] = [stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), stat.slice(stat.lastIndexOf(')') + 2).split(' ')];
      if (command === 'temporal' && Number(rest[1]) === parent) children.push(Number(entry));
    } catch {
      // The process ended while we read.
    }
  }
  return children;
}

/** Pids of live processes whose command line names `configPath` (keel and the worker processes keel dev starts). */
function processesNaming(configPath: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(configPath) && isRunning(Number(entry));
      } catch {
        return false; // it ended while we read
      }
    })
    .map(Number);
}

/** True when nothing listens on 127.0.0.1:`port`. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

describe('server.dbFile', () => {
  it.each([['server'], ['dev']])('keel %s exits 2 at once, naming server.dbFile, when its directory cannot be made', async (command) => {
    const { path } = await writeConfig({ dbFile: '/proc/keel/db.sqlite' });
    const keel = track(spawnKeel([command, '--config', path]));
    expect(await exitWithin(keel, 10_000), keel.output()).toBe(2);
    expect(keel.stderr()).toContain('server.dbFile /proc/keel/db.sqlite: cannot create /proc/keel: ENOENT');
  });
});

describe('a killed keel', () => {
  it.each([['server'], ['dev', '--allow-empty']])(
    'keel %s killed with SIGKILL takes its temporal process (and worker processes) with it and frees the port',
    async (...args) => {
      const { path, port } = await writeConfig({});
      const keel = track(spawnKeel([...args, '--config', path]));
      await keel.waitFor(args[0] === 'server' ? /Temporal dev server at 127\.0\.0\.1:\d+/ : /keel: worker \d+ on task queue/);
      const [temporal] = temporalChildrenOf(keel.child.pid!);
      expect(temporal, 'keel runs temporal as its child').toBeDefined();
      temporalPids.push(temporal!);
      const killed = new Promise((resolve) => keel.child.once('exit', resolve));
      keel.kill('SIGKILL');
      // 'exit', not keel.exited: that waits for keel's output pipes, which a surviving temporal holds open.
      await killed;
      await expect.poll(() => isRunning(temporal!), { timeout: 10_000, interval: 100 }).toBe(false);
      expect(await canListen(port)).toBe(true);
      await expect.poll(() => processesNaming(path), { timeout: 10_000, interval: 100 }).toEqual([]);
    },
  );
});

describe('a server keel did not start', () => {
  it('keel server refuses a port where a Temporal server already runs, naming its address and that keel did not start it from this project', async () => {
    const address = inject('temporalAddress');
    const { path } = await writeConfig({ port: Number(address.split(':').pop()) });
    const keel = track(spawnKeel(['server', '--config', path]));
    expect(await exitWithin(keel, 15_000), keel.output()).toBe(1);
    expect(keel.stderr()).toContain(
      `a Temporal server already runs at ${address}, not started by keel from this project (one started by hand, or by keel elsewhere): stop it`,
    );
    expect(await isServerReachable(address)).toBe(true);
  });

  it('keel dev says it uses the server already running, not started by keel from this project, and leaves it running when stopped', async () => {
    const address = inject('temporalAddress');
    const { path } = await writeConfig({}, { temporal: { address } });
    // A record of the address whose keel process is gone (a pid that has exited) does not count.
    const gone = spawnSync('true').pid;
    const stale: ServerOwnersFile = {
      servers: [{ address, keel: { pid: gone }, command: 'keel dev', projectDir: dirname(path), startedAt: new Date().toISOString() }],
    };
    mkdirSync(join(dirname(path), '.keel'));
    writeFileSync(serverOwnersPath(dirname(path)), JSON.stringify(stale));
    const keel = track(spawnKeel(['dev', '--allow-empty', '--config', path]));
    await keel.waitFor(/keel: worker \d+ on task queue/);
    expect(keel.stderr()).toContain(
      `keel: using the Temporal server already running at ${address}, not started by keel from this project; keel leaves it running`,
    );
    keel.kill('SIGTERM');
    expect(await keel.exited).toBe(0);
    expect(await isServerReachable(address)).toBe(true);
  });
});

describe('whose server it is', () => {
  it('keel dev and keel server name the keel process and project that started the server on the port', async () => {
    const { path, port } = await writeConfig({});
    const project = dirname(path);
    const address = `127.0.0.1:${port}`;
    const server = track(spawnKeel(['server', '--config', path]));
    await server.waitFor(/Temporal dev server at 127\.0\.0\.1:\d+/);
    const record = JSON.parse(readFileSync(serverOwnersPath(project), 'utf8')) as ServerOwnersFile;
    expect(record.servers).toEqual([
      expect.objectContaining({ address, command: 'keel server', projectDir: project, keel: expect.objectContaining({ pid: server.child.pid }) }),
    ]);
    const owner = `started by keel server (pid ${server.child.pid}) in ${project}`;

    const dev = track(spawnKeel(['dev', '--allow-empty', '--config', path]));
    await dev.waitFor(/keel: worker \d+ on task queue/);
    expect(dev.stderr()).toContain(`keel: using the Temporal dev server at ${address} ${owner}; this keel dev leaves it running`);
    dev.kill('SIGTERM');
    expect(await dev.exited).toBe(0);

    const second = track(spawnKeel(['server', '--config', path]));
    expect(await exitWithin(second, 15_000), second.output()).toBe(1);
    expect(second.stderr()).toContain(`a Temporal server already runs at ${address}, ${owner}: stop it, or give this server another port (server.port)`);

    // Stopped, the server's record goes with it.
    server.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect((JSON.parse(readFileSync(serverOwnersPath(project), 'utf8')) as ServerOwnersFile).servers).toEqual([]);
  });
});
