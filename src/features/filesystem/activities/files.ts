/**
 * The `files` activity: the Filesystem middleware's operations on a root directory (list,
 * read, stat, write, edit), every path confined by ConfinedRoot (race-free on Linux: nothing
 * outside the root is ever opened, created or truncated, whatever another process swaps). A relative root resolves
 * against the worker's working directory, so each worker may have its own. Limits are the
 * reference's: files over 10 MiB are refused, a whole text file or a slice over 256 KiB too.
 * Node side.
 */
import type { FileHandle } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import type { z } from 'zod';
import { KeelError } from '../../../core/errors';
import { applyEdits, filesDoor, type FileEntry, type FileOperationSchema, type FileResult, type FileStamp } from '../files';
import { implementActivity } from '../../../activities/feature-activity';
import { ConfinedRoot, listEntries } from './confined-fs';

/** Files larger than this are never read. */
export const MAX_FILE_BYTES = 10 * 1024 * 1024;
/** Most text one read returns. */
export const MAX_READ_BYTES = 256 * 1024;

const IMAGE_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.bmp': 'image/bmp',
};

const stampOf = (info: { mtimeMs: number; size: number }): FileStamp => ({ mtimeMs: info.mtimeMs, size: info.size });

/** Whether a file may be overwritten: never read → refused if it exists; changed since read → refused. */
function checkUnchanged(path: string, current: FileStamp | undefined, read: FileStamp | undefined): void {
  if (!current) return;
  if (!read) throw new KeelError('FAILED_PRECONDITION', `file "${path}" exists but has not been read yet; read_file it first`, { path });
  if (current.mtimeMs !== read.mtimeMs || current.size !== read.size)
    throw new KeelError('FAILED_PRECONDITION', `file "${path}" has been modified since last read; re-read it`, { path });
}

async function list(root: ConfinedRoot, dirPath: string, recursive: boolean): Promise<FileEntry[]> {
  return (await listEntries(root, dirPath, recursive)).map(({ path, info }) => ({
    path,
    isDirectory: info.isDirectory(),
    ...(info.isDirectory() ? {} : { sizeBytes: info.size }),
  }));
}

/** All of an open file's bytes, read from the start (whatever its position). */
async function readAll(handle: FileHandle, size: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let position = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.max(64 * 1024, Math.min(size - position, MAX_FILE_BYTES + 1)));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
    if (bytesRead === 0) break;
    chunks.push(chunk.subarray(0, bytesRead));
    position += bytesRead;
    if (position > MAX_FILE_BYTES) break;
  }
  return Buffer.concat(chunks);
}

async function read(root: ConfinedRoot, filePath: string, offset: number, limit: number): Promise<FileResult> {
  const { handle, rel, info } = await root.openForRead(filePath);
  try {
    if (info.size > MAX_FILE_BYTES)
      throw new KeelError('OUT_OF_RANGE', `file "${rel}" is ${info.size} bytes, over the ${MAX_FILE_BYTES}-byte limit`, { path: rel });
    const mimeType = IMAGE_TYPES[extname(rel).toLowerCase()];
    const bytes = await readAll(handle, info.size);
    if (mimeType) return { kind: 'image', path: rel, mimeType, dataUri: `data:${mimeType};base64,${bytes.toString('base64')}`, stamp: stampOf(info) };
    const lines = bytes.toString('utf8').split('\n');
    if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
    const sliced = offset > 1 || limit > 0;
    if (!sliced && info.size > MAX_READ_BYTES) {
      throw new KeelError(
        'OUT_OF_RANGE',
        `file "${rel}" is ${info.size} bytes, over the ${MAX_READ_BYTES}-byte limit of one read; use offset/limit to read part of it`,
        { path: rel },
      );
    }
    const from = Math.max(1, offset);
    const to = limit > 0 ? Math.min(lines.length, from + limit - 1) : lines.length;
    const content = lines.slice(from - 1, to).join('\n') + (to > 0 && to >= from ? '\n' : '');
    if (Buffer.byteLength(content) > MAX_READ_BYTES)
      throw new KeelError('OUT_OF_RANGE', `lines ${from}-${to} of "${rel}" are over the ${MAX_READ_BYTES}-byte limit of one read; narrow the range`, {
        path: rel,
      });
    return { kind: 'text', path: rel, content, totalLines: lines.length, from, to, sliced, stamp: stampOf(info) };
  } finally {
    await handle.close();
  }
}

/**
 * Writes a file through one verified descriptor: opened (or created) inside the root, checked
 * unchanged since the run read it, then truncated and written through that same descriptor, so
 * nothing outside the root is ever created or truncated, whatever is swapped meanwhile.
 */
async function write(
  root: ConfinedRoot,
  filePath: string,
  produce: (existing: string | undefined) => string,
  readStamp: FileStamp | undefined,
): Promise<{ path: string; stamp: FileStamp }> {
  const { handle, rel, info, created } = await root.openForWrite(filePath, { createParents: true });
  try {
    checkUnchanged(rel, created ? undefined : stampOf(info), readStamp);
    const existing = created ? undefined : (await readAll(handle, info.size)).toString('utf8');
    const next = Buffer.from(produce(existing), 'utf8');
    await handle.truncate(0);
    for (let written = 0; written < next.length;) written += (await handle.write(next, written, next.length - written, written)).bytesWritten;
    return { path: rel, stamp: stampOf(await handle.stat()) };
  } catch (error) {
    // A file this call created and could not fill is not left behind empty.
    if (created) await root.removeCreated(rel, handle).catch(() => undefined);
    throw error;
  } finally {
    await handle.close();
  }
}

/** Runs one file operation (the `files` activity; its door parsed the operation). */
export async function runFileOperation(operation: z.output<typeof FileOperationSchema>): Promise<FileResult> {
  const root = await ConfinedRoot.open(resolve(operation.root));
  try {
    return await perform(root, operation);
  } finally {
    await root.close();
  }
}

async function perform(root: ConfinedRoot, operation: z.output<typeof FileOperationSchema>): Promise<FileResult> {
  switch (operation.op) {
    case 'list':
      return { kind: 'list', entries: await list(root, operation.dirPath, operation.recursive) };
    case 'read':
      return read(root, operation.filePath, operation.offset, operation.limit);
    case 'stat': {
      const { rel, info } = await root.stat(operation.filePath);
      return { kind: 'stat', path: rel, exists: info !== undefined, isDirectory: info?.isDirectory() ?? false, ...(info ? { stamp: stampOf(info) } : {}) };
    }
    case 'write': {
      const written = await write(root, operation.filePath, () => operation.content, operation.read);
      return { kind: 'written', ...written };
    }
    case 'edit': {
      const { rel, info } = await root.stat(operation.filePath);
      if (!info) throw new KeelError('NOT_FOUND', `file "${rel}" does not exist`, { path: rel });
      if (!operation.read) throw new KeelError('FAILED_PRECONDITION', `file "${rel}" has not been read yet; read_file it first`, { path: rel });
      const written = await write(
        root,
        operation.filePath,
        (existing) => {
          try {
            return applyEdits(existing ?? '', operation.edits);
          } catch (error) {
            throw new KeelError('INVALID_ARGUMENT', (error as Error).message, { path: rel });
          }
        },
        operation.read,
      );
      return { kind: 'written', ...written, edits: operation.edits.length };
    }
  }
}

/** The Node half of Filesystem: the `files` activity, heartbeated (a worker that dies mid-operation is noticed within the heartbeat timeout). */
export const filesystemActivities = [implementActivity(filesDoor, runFileOperation, { heartbeat: true })];
