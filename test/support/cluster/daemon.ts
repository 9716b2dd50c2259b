/**
 * A long-running process of the cluster lane (PostgreSQL, the Temporal server): started in a
 * process group of its own with its output in a log file, tied to the test process (setpriv
 * --pdeathsig, as the dev server is), and stopped by signalling the whole group, then SIGKILL
 * after a grace, so that nothing it forked is left behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { diesWithParent } from '../../../src/server/parent-death';

/** A started daemon. */
export interface Daemon {
  child: ChildProcess;
  /** The log file its stdout and stderr go to. */
  log: string;
  /** The end of its log, for error messages. */
  tail: (lines?: number) => string;
  /** True until it has exited. */
  alive: () => boolean;
  /** Settles with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** Sends `signal` to its process group, SIGKILL after `graceMs`; resolves once it has exited. */
  stop: (options?: { signal?: NodeJS.Signals; graceMs?: number }) => Promise<void>;
}

/** Options of `startDaemon`. */
export interface DaemonOptions {
  command: string;
  args: string[];
  log: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Run as this user and group (root only): `setpriv --reuid --regid --init-groups`. */
  user?: { uid: number; gid: number };
}

/** The end of a log file. */
export function tailOf(log: string, lines = 40): string {
  return existsSync(log) ? readFileSync(log, 'utf8').trimEnd().split('\n').slice(-lines).join('\n') : '(no log)';
}

/** Starts `command args` as a daemon. */
export function startDaemon({ command, args, log, cwd, env = process.env, user }: DaemonOptions): Daemon {
  const tied = diesWithParent(command, args);
  // setpriv is the tie; it also drops privileges when asked (one exec: the pid stays the daemon's own).
  const asUser = user && tied.command.endsWith('setpriv') ? ['--reuid', String(user.uid), '--regid', String(user.gid), '--init-groups'] : [];
  if (user && asUser.length === 0) throw new Error(`running ${command} as uid ${user.uid} needs util-linux's setpriv`);
  const output = openSync(log, 'a');
  const child = spawn(tied.command, [...asUser, ...tied.args], { cwd, env, detached: true, stdio: ['ignore', output, output] });
  closeSync(output);
  let running = true;
  const exited = new Promise<number | null>((settle) =>
    child.once('exit', (code) => {
      running = false;
      settle(code);
    }),
  );
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // The group is gone already.
    }
  };
  return {
    child,
    log,
    tail: (lines) => tailOf(log, lines),
    alive: () => running,
    exited,
    async stop({ signal = 'SIGTERM', graceMs = 20_000 } = {}) {
      if (running) {
        signalGroup(signal);
        const timer = setTimeout(() => signalGroup('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      // Whatever it forked and left in its group goes too.
      signalGroup('SIGKILL');
    },
  };
}
