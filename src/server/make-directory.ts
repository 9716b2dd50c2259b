/**
 * Creates a directory and its missing parents one component at a time, and stops at the first
 * that cannot be made. Not `mkdirSync(path, { recursive: true })`: where a parent exists but
 * refuses new entries with ENOENT (/proc, some FUSE mounts), Node's recursive mkdir retries
 * forever at full CPU and never returns. Node side.
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname, join, parse, resolve, sep } from 'node:path';
import { getSystemErrorMap } from 'node:util';

/** A directory that could not be made: `path` is the first component that failed, `code` the OS's error code. */
export class DirectoryError extends Error {
  constructor(
    readonly path: string,
    readonly code: string,
    readonly reason: string,
  ) {
    super(code === 'ENOTDIR' ? `${path} exists and is not a directory` : `cannot create ${path}: ${code}: ${reason}`);
    this.name = 'DirectoryError';
  }
}

/** Makes `path` and its missing parents; throws a DirectoryError naming the first component that fails. */
export function makeDirectory(path: string): void {
  const absolute = resolve(path);
  const { root } = parse(absolute);
  let current = root;
  for (const name of absolute.slice(root.length).split(sep).filter(Boolean)) {
    current = join(current, name);
    makeComponent(current);
  }
}

/** Makes one directory whose parent exists; an existing directory is left as it is. */
function makeComponent(path: string): void {
  const existing = statSync(path, { throwIfNoEntry: false });
  if (existing?.isDirectory()) return;
  if (existing) throw new DirectoryError(path, 'ENOTDIR', 'not a directory');
  try {
    mkdirSync(path);
  } catch (error) {
    const { code = 'UNKNOWN', errno } = error as NodeJS.ErrnoException;
    // Another process may have made it since the stat.
    if (code === 'EEXIST' && statSync(path, { throwIfNoEntry: false })?.isDirectory()) return;
    const description = (errno !== undefined && getSystemErrorMap().get(errno)?.[1]) || (error as Error).message;
    // The parent was just seen to be a directory, so ENOENT means its file system takes no new entries.
    const hint = code === 'ENOENT' ? ` (${dirname(path)} exists but takes no new directories)` : '';
    throw new DirectoryError(path, code, `${description}${hint}`);
  }
}
