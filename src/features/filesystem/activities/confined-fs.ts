/**
 * File access confined to a root directory, safe against a concurrent attacker. Node has no
 * `os.Root` and no `openat`, but on Linux `/proc/self/fd/<fd>/<name>` names `<name>` inside the
 * directory that descriptor `<fd>` holds, whatever has happened to the path since: so a path is
 * walked one component at a time from a descriptor of the root, each directory opened with
 * O_NOFOLLOW relative to the one before. A symlink met on the way is read and followed only when
 * its target stays inside the root (the walk starts again from the root with the target); `..`
 * never climbs above the root. A file is opened the same way, relative to its verified parent,
 * never created or truncated before that: an existing file is opened without O_TRUNC and
 * truncated through the descriptor once it is known to be a regular file inside the root; a new
 * one is created with O_EXCL | O_NOFOLLOW. Opens are non-blocking and anything but a regular file
 * (a FIFO, a socket, a device) is refused at once, so no libuv thread ever waits on a FIFO.
 * Where /proc/self/fd does not exist (macOS), the same walk runs on paths: every component is
 * still checked, but a swap between two steps is not excluded there. Node side.
 */
import { constants, existsSync, type Stats } from 'node:fs';
import { lstat, mkdir, open, readdir, readlink, realpath, unlink, type FileHandle } from 'node:fs/promises';
import { isAbsolute, posix, relative, sep } from 'node:path';
import { KeelError } from '../../../core/errors';
import { normalizeRel } from '../files';

/** Longest path accepted from a model. */
const MAX_PATH_LENGTH = 4096;
/** Most symbolic links one path may go through (Linux's own limit). */
const MAX_LINKS = 40;
/** Where a descriptor's directory can be named (Linux); absent elsewhere. */
const PROC_FD = existsSync('/proc/self/fd') ? '/proc/self/fd' : undefined;
/** Opens never follow a final symlink and never block (a FIFO, a lock). */
const SAFE = constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** An error about a path (model-visible). */
function pathError(path: string, why: string): KeelError {
  return new KeelError('PERMISSION_DENIED', `path "${path}" ${why}`, { path });
}

/** True when `candidate` is `root` or inside it. */
function inside(root: string, candidate: string): boolean {
  const rel = relative(root, candidate);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

const code = (error: unknown) => (error as NodeJS.ErrnoException).code;

/** What a non-regular file is, for a refusal. */
function kindOf(info: Stats): string {
  if (info.isDirectory()) return 'a directory';
  if (info.isFIFO()) return 'a FIFO (named pipe)';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  if (info.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/** A directory held open: its descriptor, its path relative to the root (symlinks resolved), and how to name a child. */
interface Dir {
  handle: FileHandle;
  rel: string;
  /** Prefix naming entries of this directory: `/proc/self/fd/<fd>`, or its absolute path where there is no /proc. */
  path: string;
}

/** Thrown by an attempt on a final component that turned out to be a symbolic link: the walk follows it. */
class FollowLink extends Error {}

/** Refuses anything that is not a regular file, naming what it is. */
function regular(shown: string, info: Stats): void {
  if (info.isFile()) return;
  if (info.isDirectory()) throw new KeelError('INVALID_ARGUMENT', `"${shown}" is a directory; use list_files`, { path: shown });
  throw new KeelError('INVALID_ARGUMENT', `"${shown}" is ${kindOf(info)}, not a regular file; only regular files are read or written`, { path: shown });
}

/** What `lstat` finds at `path` (a symlink is to be followed: FollowLink), or undefined when nothing is there. */
async function entryAt(path: string): Promise<Stats | undefined> {
  const info = await lstat(path).catch((error: unknown) => {
    if (code(error) === 'ENOENT') return undefined;
    throw error;
  });
  if (info?.isSymbolicLink()) throw new FollowLink();
  return info;
}

/** A file opened inside the root, checked to be a regular file. */
export interface OpenedFile {
  handle: FileHandle;
  /** Its path relative to the root, as the model named it (normalized). */
  rel: string;
  info: Stats;
}

/** A root directory and the confined operations on it. Close it when done. */
export class ConfinedRoot {
  private constructor(
    /** The root's real path (symlinks resolved). */
    readonly real: string,
    private readonly root: Dir,
  ) {}

  /** Opens a root; FAILED_PRECONDITION when it does not exist or is not a directory. */
  static async open(rootDirectory: string): Promise<ConfinedRoot> {
    let real: string;
    let handle: FileHandle;
    try {
      real = await realpath(rootDirectory);
      handle = await open(real, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NONBLOCK);
    } catch (error) {
      if (code(error) === 'ENOTDIR') throw new KeelError('FAILED_PRECONDITION', `root directory "${rootDirectory}" is not a directory`);
      throw new KeelError('FAILED_PRECONDITION', `root directory "${rootDirectory}" cannot be opened: ${code(error) ?? (error as Error).message}`);
    }
    return new ConfinedRoot(real, { handle, rel: '.', path: PROC_FD ? `${PROC_FD}/${handle.fd}` : real });
  }

  /** Closes the root's descriptor. */
  async close(): Promise<void> {
    await this.root.handle.close();
  }

  /** A model's path, normalized and checked (NUL, length, `..` above the root); `.` is the root. */
  check(path: string): string {
    if (path.includes('\0')) throw pathError(path.replace(/\0/g, '\\0'), 'contains a NUL byte');
    if (path.length > MAX_PATH_LENGTH) throw pathError(`${path.slice(0, 40)}…`, `is longer than ${MAX_PATH_LENGTH} characters`);
    const rel = normalizeRel(path);
    if (rel === '..' || rel.startsWith('../')) throw pathError(path, 'is outside the root directory');
    return rel;
  }

  private child(dir: Dir, name: string): string {
    return `${dir.path}/${name}`;
  }

  private async closeDir(dir: Dir): Promise<void> {
    if (dir !== this.root) await dir.handle.close().catch(() => undefined);
  }

  /**
   * Where a symlink found at `name` in `dir` leads, as a path relative to the root followed by
   * `rest`; refused when it leads outside the root.
   */
  private async followLink(shown: string, dir: Dir, name: string, rest: readonly string[]): Promise<string> {
    let link: string;
    try {
      link = await readlink(this.child(dir, name));
    } catch {
      throw pathError(shown, 'goes through a symbolic link that cannot be read');
    }
    let target: string;
    if (isAbsolute(link)) {
      if (!inside(this.real, link)) throw pathError(shown, 'resolves outside the root directory (through a symbolic link)');
      target = relative(this.real, link).split(sep).join('/') || '.';
    } else {
      target = posix.join(dir.rel, link);
    }
    const next = posix.normalize(posix.join(target, ...rest));
    if (next === '..' || next.startsWith('../') || posix.isAbsolute(next))
      throw pathError(shown, 'resolves outside the root directory (through a symbolic link)');
    return next;
  }

  /**
   * Opens the directory at `rel` (relative to the root, normalized), component by component,
   * following symlinks that stay inside the root; with `create`, missing directories are made
   * (0755) as it goes. The caller closes what it gets (unless it is the root).
   */
  private async walkDir(shown: string, rel: string, { create = false } = {}): Promise<Dir> {
    let pending = rel;
    for (let links = 0; ; links++) {
      if (links > MAX_LINKS) throw pathError(shown, 'goes through too many symbolic links');
      const components = pending === '.' ? [] : pending.split('/');
      let dir = this.root;
      try {
        const restart = await this.descend(shown, components, create, (opened) => (dir = opened));
        if (restart === undefined) return dir;
        pending = restart;
      } catch (error) {
        await this.closeDir(dir);
        throw error;
      }
      await this.closeDir(dir);
    }
  }

  /**
   * One pass of `walkDir` from the root: opens each component in turn (reporting each opened
   * directory through `moved`, the previous one closed); returns the path to walk again when a
   * symlink was met, undefined when the last component is open.
   */
  private async descend(shown: string, components: readonly string[], create: boolean, moved: (dir: Dir) => Dir): Promise<string | undefined> {
    let dir = this.root;
    // (Bounded: a directory removed as fast as it is made is not chased for ever.)
    let makes = components.length + MAX_LINKS;
    for (let index = 0; index < components.length; index++) {
      const name = components[index]!;
      const here = posix.join(dir.rel, name);
      let next: FileHandle;
      try {
        next = await open(this.child(dir, name), constants.O_RDONLY | constants.O_DIRECTORY | SAFE);
      } catch (error) {
        const failure = code(error);
        if (failure === 'ENOENT' && create && makes-- > 0) {
          await mkdir(this.child(dir, name), { mode: 0o755 }).catch((made: unknown) => {
            if (code(made) === 'EEXIST') return;
            // The directory that was to hold it was removed meanwhile.
            if (code(made) === 'ENOENT')
              throw new KeelError('NOT_FOUND', `directory "${dir.rel}" went away while "${shown}" was being opened`, { path: shown });
            throw new KeelError('INTERNAL', `cannot create directory "${here}": ${code(made) ?? (made as Error).message}`, { path: shown });
          });
          index--; // open what was just made (or what someone else made meanwhile), with the same checks
          continue;
        }
        if (failure === 'ELOOP' || failure === 'ENOTDIR') {
          const info = await lstat(this.child(dir, name)).catch(() => undefined);
          if (info?.isSymbolicLink()) return this.followLink(shown, dir, name, components.slice(index + 1));
          throw new KeelError('INVALID_ARGUMENT', `"${here}" is not a directory`, { path: shown });
        }
        if (failure === 'ENOENT') throw new KeelError('NOT_FOUND', `directory "${here}" does not exist`, { path: shown });
        throw new KeelError('INTERNAL', `cannot open "${here}": ${failure ?? (error as Error).message}`, { path: shown });
      }
      const opened: Dir = { handle: next, rel: here, path: PROC_FD ? `${PROC_FD}/${next.fd}` : `${dir.path}/${name}` };
      await this.closeDir(dir);
      dir = moved(opened);
    }
    return undefined;
  }

  /**
   * Runs `attempt` on the last component of `rel` inside its (verified, open) parent directory.
   * An attempt that finds a symlink throws FollowLink: the link is followed (inside the root
   * only) and the attempt made again on what it leads to.
   */
  private async atFinal<T>(
    shown: string,
    rel: string,
    attempt: (dir: Dir, name: string, childRel: string) => Promise<T>,
    { createParents = false } = {},
  ): Promise<T> {
    let pending = rel;
    for (let links = 0; ; links++) {
      if (links > MAX_LINKS) throw pathError(shown, 'goes through too many symbolic links');
      if (pending === '.') throw new KeelError('INVALID_ARGUMENT', `"${shown}" is the root directory, not a file`, { path: shown });
      const parent = posix.dirname(pending);
      const name = posix.basename(pending);
      const dir = await this.walkDir(shown, parent, { create: createParents });
      try {
        return await attempt(dir, name, posix.join(dir.rel, name));
      } catch (error) {
        if (!(error instanceof FollowLink)) throw error;
        pending = await this.followLink(shown, dir, name, []);
      } finally {
        await this.closeDir(dir);
      }
    }
  }

  /** Opens `name` in `dir` with `flags` (never following it, never blocking); a symlink throws FollowLink. */
  private async openIn(dir: Dir, name: string, flags: number, mode?: number): Promise<FileHandle> {
    try {
      return await open(this.child(dir, name), flags | SAFE, mode);
    } catch (error) {
      if (code(error) === 'ELOOP') throw new FollowLink();
      throw error;
    }
  }

  /** A checked lstat of an entry before opening it: a symlink is followed, anything but a regular file refused unopened. */
  private async lstatEntry(shown: string, dir: Dir, name: string): Promise<Stats | undefined> {
    const info = await entryAt(this.child(dir, name));
    if (info) regular(shown, info);
    return info;
  }

  /** Opens a regular file inside the root for reading. */
  async openForRead(path: string): Promise<OpenedFile> {
    const rel = this.check(path);
    return this.atFinal(rel, rel, async (dir, name) => {
      if (!(await this.lstatEntry(rel, dir, name))) throw new KeelError('NOT_FOUND', `file "${rel}" does not exist`, { path: rel });
      const handle = await this.openIn(dir, name, constants.O_RDONLY).catch((error: unknown) => {
        if (error instanceof FollowLink) throw error;
        if (code(error) === 'ENOENT') throw new KeelError('NOT_FOUND', `file "${rel}" does not exist`, { path: rel });
        if (code(error) === 'ENXIO')
          throw new KeelError('INVALID_ARGUMENT', `"${rel}" is a socket, not a regular file; only regular files are read or written`, { path: rel });
        throw new KeelError('INTERNAL', `cannot open "${rel}": ${code(error) ?? (error as Error).message}`, { path: rel });
      });
      return this.checked(rel, handle);
    });
  }

  /**
   * Opens a regular file inside the root for writing: an existing one as it is (nothing
   * truncated: truncate through the handle once you decide to write), or a new one, created
   * empty; with `createParents`, missing directories are made first. `created` says which.
   */
  async openForWrite(path: string, { createParents = false } = {}): Promise<OpenedFile & { created: boolean }> {
    const rel = this.check(path);
    return this.atFinal(
      rel,
      rel,
      async (dir, name) => {
        // A file that appears or vanishes between the look and the open is looked at again, a few times.
        for (let tries = 0; tries < 8; tries++) {
          const existing = await this.lstatEntry(rel, dir, name);
          try {
            if (existing) return { ...(await this.checked(rel, await this.openIn(dir, name, constants.O_RDWR))), created: false };
            return {
              ...(await this.checked(rel, await this.openIn(dir, name, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, 0o644))),
              created: true,
            };
          } catch (error) {
            if (error instanceof FollowLink || KeelError.isInstance(error)) throw error;
            if (code(error) === 'EEXIST') continue;
            // Gone since the look, or (creating) its directory is gone: a directory removed under us.
            if (code(error) === 'ENOENT' && existing) continue;
            if (code(error) === 'ENOENT')
              throw new KeelError('NOT_FOUND', `the directory of "${rel}" went away while the file was being created`, { path: rel });
            if (code(error) === 'ENXIO')
              throw new KeelError('INVALID_ARGUMENT', `"${rel}" is a FIFO or a socket, not a regular file; only regular files are read or written`, {
                path: rel,
              });
            throw new KeelError('INTERNAL', `cannot open "${rel}" for writing: ${code(error) ?? (error as Error).message}`, { path: rel });
          }
        }
        throw new KeelError('ABORTED', `"${rel}" kept changing while it was being opened; try again`, { path: rel });
      },
      { createParents },
    );
  }

  /** Checks what a descriptor holds: a regular file (else closed and refused), inside the root. */
  private async checked(rel: string, handle: FileHandle): Promise<OpenedFile> {
    try {
      const info = await handle.stat();
      regular(rel, info);
      if (PROC_FD) {
        // Belt and braces: the walk already held every directory on the way.
        const opened = await readlink(`${PROC_FD}/${handle.fd}`).catch(() => undefined);
        if (opened !== undefined && !opened.endsWith(' (deleted)') && !inside(this.real, opened)) throw pathError(rel, 'resolves outside the root directory');
      }
      return { handle, rel, info };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Removes a file this root created (`handle` still open), if the name still holds it: nothing else is ever removed. */
  async removeCreated(path: string, handle: FileHandle): Promise<void> {
    const rel = this.check(path);
    const held = await handle.stat();
    await this.atFinal(rel, rel, async (dir, name) => {
      const there = await lstat(this.child(dir, name)).catch(() => undefined);
      if (there && there.ino === held.ino && there.dev === held.dev) await unlink(this.child(dir, name));
    });
  }

  /** What is at a path inside the root (a symlink followed inside the root): its stats, or undefined when nothing is there. */
  async stat(path: string): Promise<{ rel: string; info?: Stats }> {
    const rel = this.check(path);
    if (rel === '.') return { rel, info: await this.root.handle.stat() };
    try {
      const info = await this.atFinal(rel, rel, (dir, name) => entryAt(this.child(dir, name)));
      return { rel, ...(info ? { info } : {}) };
    } catch (error) {
      if (KeelError.isInstance(error) && error.status === 'NOT_FOUND') return { rel };
      throw error;
    }
  }

  /** The names in directory `dirRel` inside the root (shown as `shown` in errors), sorted, each marked when it is a symlink. */
  async names(shown: string, dirRel: string): Promise<Array<{ name: string; link: boolean }>> {
    const dir = await this.walkDir(shown, dirRel);
    try {
      const entries = await readdir(dir.path, { withFileTypes: true });
      return entries.map((entry) => ({ name: entry.name, link: entry.isSymbolicLink() })).sort((a, b) => a.name.localeCompare(b.name));
    } finally {
      await this.closeDir(dir);
    }
  }
}

/**
 * The entries of a directory inside `root`, sorted by name: each symlink by what it leads to
 * (left out when that is outside the root or missing); with `recursive`, real subdirectories
 * too (symlinked ones are listed, not entered), as slash paths.
 */
export async function listEntries(root: ConfinedRoot, path: string, recursive: boolean): Promise<Array<{ path: string; info: Stats }>> {
  const rel = root.check(path);
  const top = await root.stat(rel);
  if (!top.info) throw new KeelError('NOT_FOUND', `directory "${rel}" does not exist`, { path: rel });
  if (!top.info.isDirectory()) throw new KeelError('INVALID_ARGUMENT', `"${rel}" is not a directory`, { path: rel });
  const entries: Array<{ path: string; info: Stats }> = [];
  const walk = async (dirRel: string, prefix: string): Promise<void> => {
    for (const { name, link } of await root.names(rel, dirRel)) {
      const childRel = dirRel === '.' ? name : `${dirRel}/${name}`;
      const shown = prefix ? `${prefix}/${name}` : name;
      const found = await root.stat(childRel).catch(() => undefined);
      if (!found?.info) continue;
      entries.push({ path: shown, info: found.info });
      if (recursive && found.info.isDirectory() && !link) await walk(childRel, shown);
    }
  };
  await walk(rel, '');
  return entries;
}

/**
 * Reads a file by path, only if it is a regular file (not a symlink, FIFO, socket or device)
 * of at most `maxBytes`: opened with O_NOFOLLOW | O_NONBLOCK and checked through the
 * descriptor, so swapping in a FIFO never blocks a thread. Undefined when it is not there, or
 * not such a file; `tooLarge` when it is over the limit.
 */
export async function readRegularFile(path: string, maxBytes: number): Promise<{ content: string } | { tooLarge: true } | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | SAFE);
  } catch {
    return undefined;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return undefined;
    if (info.size > maxBytes) return { tooLarge: true };
    return { content: (await handle.readFile()).toString('utf8') };
  } finally {
    await handle.close();
  }
}
