/**
 * File access confined to a root directory. Node has no `os.Root`, so confinement is done
 * here: a model's path is normalized and resolved against the root; a path that leaves the
 * root (`..`, an absolute escape, a symlink or symlinked directory pointing outside) is
 * refused at every component; and what is opened is verified after opening (the opened
 * descriptor's real path, or its device and inode), so a symlink swapped in between the check
 * and the open cannot smuggle a file from outside. Node side.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, readlink, realpath, stat, type FileHandle } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { KeelError } from '../core/errors';
import { normalizeRel } from '../core/files';

/** Longest path accepted from a model. */
const MAX_PATH_LENGTH = 4096;

/** An error about a path (model-visible). */
function pathError(path: string, why: string): KeelError {
  return new KeelError('PERMISSION_DENIED', `path "${path}" ${why}`, { path });
}

/** True when `candidate` is `root` or inside it. */
function inside(root: string, candidate: string): boolean {
  const rel = relative(root, candidate);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** A root directory and the confined operations on it. */
export class ConfinedRoot {
  private constructor(
    /** The root's real path (symlinks resolved). */
    readonly real: string,
  ) {}

  /** Opens a root; FAILED_PRECONDITION when it does not exist or is not a directory. */
  static async open(rootDirectory: string): Promise<ConfinedRoot> {
    let real: string;
    try {
      real = await realpath(rootDirectory);
    } catch (error) {
      throw new KeelError('FAILED_PRECONDITION', `root directory "${rootDirectory}" cannot be opened: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    if (!(await stat(real)).isDirectory()) throw new KeelError('FAILED_PRECONDITION', `root directory "${rootDirectory}" is not a directory`);
    return new ConfinedRoot(real);
  }

  /**
   * The absolute path of a model's path inside the root, checked component by component:
   * every existing component that is a symlink must resolve inside the root. Components that
   * do not exist yet are allowed (for writes).
   */
  async resolve(path: string): Promise<{ rel: string; absolute: string }> {
    if (path.includes('\0')) throw pathError(path.replace(/\0/g, '\\0'), 'contains a NUL byte');
    if (path.length > MAX_PATH_LENGTH) throw pathError(`${path.slice(0, 40)}…`, `is longer than ${MAX_PATH_LENGTH} characters`);
    const rel = normalizeRel(path);
    if (rel === '..' || rel.startsWith('../')) throw pathError(path, 'is outside the root directory');
    let current = this.real;
    for (const component of rel === '.' ? [] : rel.split('/')) {
      const next = join(current, component);
      let info;
      try {
        info = await lstat(next);
      } catch {
        // Does not exist (yet): the rest is created inside `current`, which is inside the root.
        return { rel, absolute: join(this.real, rel) };
      }
      if (info.isSymbolicLink()) {
        let target: string;
        try {
          target = await realpath(next);
        } catch {
          throw pathError(path, 'goes through a broken symbolic link');
        }
        if (!inside(this.real, target)) throw pathError(path, 'resolves outside the root directory (through a symbolic link)');
        current = target;
      } else {
        current = next;
      }
    }
    return { rel, absolute: current };
  }

  /**
   * Opens a file inside the root without following a final symlink, then checks what was
   * opened really is inside the root (an intermediate directory swapped for a symlink since
   * `resolve` is caught here).
   */
  async openFile(path: string, flags: number, mode = 0o644): Promise<{ handle: FileHandle; rel: string }> {
    const { rel, absolute } = await this.resolve(path);
    let handle: FileHandle;
    try {
      handle = await open(absolute, flags | constants.O_NOFOLLOW, mode);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ELOOP') throw pathError(path, 'is a symbolic link');
      if (code === 'ENOENT') throw new KeelError('NOT_FOUND', `file "${rel}" does not exist`, { path: rel });
      if (code === 'EISDIR') throw new KeelError('INVALID_ARGUMENT', `"${rel}" is a directory; use list_files`, { path: rel });
      throw new KeelError('INTERNAL', `cannot open "${rel}": ${code ?? (error as Error).message}`, { path: rel });
    }
    try {
      await this.verify(handle, absolute);
    } catch (error) {
      await handle.close();
      throw error instanceof KeelError ? new KeelError(error.status, error.message.replace(/^path "[^"]*"/, `path "${path}"`), error.details) : error;
    }
    return { handle, rel };
  }

  /** Checks that an opened descriptor is a file inside the root (by its real path where the OS says, else by device and inode). */
  private async verify(handle: FileHandle, absolute: string): Promise<void> {
    const opened = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
    if (opened !== undefined) {
      if (!inside(this.real, opened)) throw pathError(absolute, 'resolves outside the root directory');
      return;
    }
    const [held, there] = await Promise.all([handle.stat(), realpath(absolute).then((real) => (inside(this.real, real) ? stat(real) : undefined))]);
    if (!there || there.dev !== held.dev || there.ino !== held.ino) throw pathError(absolute, 'resolves outside the root directory');
  }

  /** Creates the parent directories of a path inside the root (0755), each checked as it is made. */
  async makeParents(path: string): Promise<void> {
    const { rel } = await this.resolve(path);
    const parent = dirname(rel);
    if (parent === '.' || parent === '') return;
    let current = this.real;
    for (const component of parent.split('/')) {
      current = join(current, component);
      await mkdir(current, { mode: 0o755 }).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
      const real = await realpath(current);
      if (!inside(this.real, real)) throw pathError(path, 'resolves outside the root directory (through a symbolic link)');
      current = real;
    }
  }

  /** The path of an absolute path inside the root, relative to it, with slashes. */
  relativeTo(absolute: string): string {
    return relative(this.real, absolute).split(sep).join('/');
  }
}
