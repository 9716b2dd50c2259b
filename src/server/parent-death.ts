/**
 * Makes a child process die with keel. On Linux the command runs through util-linux's
 * `setpriv --pdeathsig TERM`, which asks the kernel to send the child SIGTERM when its parent
 * dies, however it dies: a SIGKILLed keel runs no exit handler, so nothing else could stop it.
 * Without a setpriv that knows --pdeathsig (other systems, minimal images) the command runs
 * as given, and outlives a killed keel. Node side.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const SETPRIV_PATHS = ['/usr/bin/setpriv', '/bin/setpriv'];

let setpriv: string | null | undefined;

/** The path of a setpriv that supports --pdeathsig, or undefined; looked up once per process. */
export function findSetpriv(): string | undefined {
  setpriv ??=
    process.platform === 'linux'
      ? (SETPRIV_PATHS.find(
          (path) => existsSync(path) && (spawnSync(path, ['--help'], { encoding: 'utf8', timeout: 5000 }).stdout ?? '').includes('--pdeathsig'),
        ) ?? null)
      : null;
  return setpriv ?? undefined;
}

/** A command to spawn in place of `command args`. */
export interface TiedCommand {
  command: string;
  args: string[];
}

/**
 * `command args` wrapped so that the child gets SIGTERM when this process dies. setpriv execs
 * the command, so the child's pid is the command's own and signals sent to it reach it. The
 * kernel ties the child to the thread that spawned it: spawn from the main thread (a
 * worker_thread's child is signalled when that thread ends).
 */
export function diesWithParent(command: string, args: string[]): TiedCommand {
  const path = findSetpriv();
  return path ? { command: path, args: ['--pdeathsig', 'TERM', '--', command, ...args] } : { command, args };
}
