/**
 * Who started the dev server at an address. When keel starts one it records, in the project's
 * git-ignored `.keel/dev-servers.json`, the keel process (pid, command, project directory) and
 * the server's own process; a later keel that finds a server answering there reads the record
 * and says whose it is, or that it is not one keel started from this project. A record only
 * counts while its process is alive: the pid answers, and on Linux it is the same process (its
 * start time in /proc matches), not another that reused the pid. Node side.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { makeDirectory } from './make-directory';

/** One process: its pid and, where /proc tells, when it started (clock ticks since boot). */
export const RecordedProcessSchema = z.object({
  pid: z.number().int().positive(),
  startTicks: z.string().optional(),
});
export type RecordedProcess = z.infer<typeof RecordedProcessSchema>;

/** Who started the dev server at `address`. */
export const ServerOwnerSchema = z.object({
  /** `ip:port` the server listens on. */
  address: z.string(),
  /** The keel process that started it. */
  keel: RecordedProcessSchema,
  /** Its command (`keel dev`, `keel server`, `keel demo`). */
  command: z.string(),
  /** The project directory (the temporal.yaml's) it ran in. */
  projectDir: z.string(),
  /** The `temporal` process itself. */
  server: RecordedProcessSchema.optional(),
  /** ISO time it started. */
  startedAt: z.string(),
});
export type ServerOwner = z.infer<typeof ServerOwnerSchema>;

/** The record file: every dev server keel started from this project and has not stopped. */
export const ServerOwnersFileSchema = z.object({ servers: z.array(ServerOwnerSchema) });
export type ServerOwnersFile = z.infer<typeof ServerOwnersFileSchema>;

/** The record file of a project. */
export function serverOwnersPath(projectDir: string): string {
  return join(projectDir, '.keel', 'dev-servers.json');
}

/** A process's start time in clock ticks since boot, from /proc (Linux); undefined elsewhere or when it is gone. */
export function processStartTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name: state is field 3, starttime field 22.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** The record of a live process, `pid`. */
export function recordedProcess(pid: number): RecordedProcess {
  const startTicks = processStartTicks(pid);
  return { pid, ...(startTicks !== undefined ? { startTicks } : {}) };
}

/** True while the recorded process runs: its pid answers and, where /proc says, it started when recorded. */
export function isAlive(recorded: RecordedProcess): boolean {
  try {
    process.kill(recorded.pid, 0);
  } catch (error) {
    // EPERM: a process of another user holds the pid; whether it is ours, its start time says.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (recorded.startTicks === undefined) return true;
  const now = processStartTicks(recorded.pid);
  return now === undefined || now === recorded.startTicks;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]', '0.0.0.0']);

/** True when two `host:port` addresses name the same server (loopback names count as one host). */
export function sameAddress(left: string, right: string): boolean {
  if (left === right) return true;
  const split = (address: string) => {
    const separator = address.lastIndexOf(':');
    return { host: address.slice(0, separator), port: address.slice(separator + 1) };
  };
  const [a, b] = [split(left), split(right)];
  return a.port === b.port && LOOPBACK.has(a.host) && LOOPBACK.has(b.host);
}

function readOwners(projectDir: string): ServerOwner[] {
  let text: string;
  try {
    text = readFileSync(serverOwnersPath(projectDir), 'utf8');
  } catch {
    return [];
  }
  try {
    const parsed = ServerOwnersFileSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.servers : [];
  } catch {
    // Not JSON (a torn write by hand): as good as no record.
    return [];
  }
}

function writeOwners(projectDir: string, servers: ServerOwner[]): void {
  const path = serverOwnersPath(projectDir);
  makeDirectory(join(projectDir, '.keel'));
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify({ servers } satisfies ServerOwnersFile, null, 2)}\n`);
  renameSync(temporary, path);
}

/** Options of `recordServerOwner`. */
export interface RecordServerOwnerOptions {
  projectDir: string;
  address: string;
  command: string;
  /** The pid of the `temporal` process. */
  serverPid?: number;
}

/**
 * Records that this process started the dev server at `address` (replacing any record of that
 * address, and dropping records whose processes are gone); returns what forgets it again, once
 * the server has stopped. A record that cannot be written is skipped: it only serves a message.
 */
export function recordServerOwner({ projectDir, address, command, serverPid }: RecordServerOwnerOptions): () => void {
  const owner: ServerOwner = {
    address,
    keel: recordedProcess(process.pid),
    command,
    projectDir,
    ...(serverPid !== undefined ? { server: recordedProcess(serverPid) } : {}),
    startedAt: new Date().toISOString(),
  };
  try {
    const others = readOwners(projectDir).filter((entry) => !sameAddress(entry.address, address) && (isAlive(entry.keel) || serverAlive(entry)));
    writeOwners(projectDir, [...others, owner]);
  } catch {
    return () => undefined;
  }
  return () => {
    try {
      const kept = readOwners(projectDir).filter((entry) => !(sameAddress(entry.address, address) && entry.keel.pid === process.pid));
      writeOwners(projectDir, kept);
    } catch {
      // The record stays; its process is gone once this one exits, so it no longer counts.
    }
  };
}

function serverAlive(owner: ServerOwner): boolean {
  return owner.server !== undefined && isAlive(owner.server);
}

/** What the project's record says of the server at `address`: its owner while the keel process (or the server it started) still runs. */
export function findServerOwner(projectDir: string, address: string): { owner: ServerOwner; keelAlive: boolean } | undefined {
  const owner = readOwners(projectDir)
    .filter((entry) => sameAddress(entry.address, address))
    .at(-1);
  if (!owner) return undefined;
  const keelAlive = isAlive(owner.keel);
  if (!keelAlive && !serverAlive(owner)) return undefined;
  return { owner, keelAlive };
}

/**
 * Whose the server at `address` is, as a phrase after the address: `started by keel dev (pid
 * 1234) in /path`, or `not started by keel from this project`.
 */
export function describeServerOwner(projectDir: string, address: string): { started: boolean; phrase: string } {
  const found = findServerOwner(projectDir, address);
  if (!found) return { started: false, phrase: 'not started by keel from this project' };
  const { owner, keelAlive } = found;
  const who = keelAlive
    ? `${owner.command} (pid ${owner.keel.pid})`
    : `${owner.command} (pid ${owner.keel.pid}, which has exited; the server, pid ${owner.server!.pid}, outlived it)`;
  return { started: true, phrase: `started by ${who} in ${owner.projectDir}` };
}
