/**
 * The `files` activity: the Filesystem middleware's operations on a root directory (list,
 * read, stat, write, edit), every path confined by ConfinedRoot. A relative root resolves
 * against the worker's working directory, so each worker may have its own. Limits are the
 * reference's: files over 10 MiB are refused, a whole text file or a slice over 256 KiB too.
 * Node side.
 */
import { constants } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { KeelError } from '../core/errors';
import { FileOperationSchema, applyEdits, type FileEntry, type FileOperation, type FileResult, type FileStamp } from '../core/files';
import { describeZodError } from '../core/schema-errors';
import { ConfinedRoot } from './confined-fs';

/** Files larger than this are never read. */
export const MAX_FILE_BYTES = 10 * 1024 * 1024;
/** Most text one read returns. */
export const MAX_READ_BYTES = 256 * 1024;

const IMAGE_TYPES: Record<string, string> = { '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp', '.bmp': 'image/bmp' };

const stampOf = (info: { mtimeMs: number; size: number }): FileStamp => ({ mtimeMs: info.mtimeMs, size: info.size });

/** Whether a file may be overwritten: never read → refused if it exists; changed since read → refused. */
function checkUnchanged(path: string, current: FileStamp | undefined, read: FileStamp | undefined): void {
  if (!current) return;
  if (!read) throw new KeelError('FAILED_PRECONDITION', `file "${path}" exists but has not been read yet; read_file it first`, { path });
  if (current.mtimeMs !== read.mtimeMs || current.size !== read.size) throw new KeelError('FAILED_PRECONDITION', `file "${path}" has been modified since last read; re-read it`, { path });
}

async function list(root: ConfinedRoot, dirPath: string, recursive: boolean): Promise<FileEntry[]> {
  const { rel, absolute } = await root.resolve(dirPath);
  const info = await stat(absolute).catch(() => undefined);
  if (!info) throw new KeelError('NOT_FOUND', `directory "${rel}" does not exist`, { path: rel });
  if (!info.isDirectory()) throw new KeelError('INVALID_ARGUMENT', `"${rel}" is not a directory`, { path: rel });
  const entries: FileEntry[] = [];
  const walk = async (relDir: string, prefix: string): Promise<void> => {
    const { absolute: dir } = await root.resolve(relDir);
    for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      const shown = prefix ? `${prefix}/${entry.name}` : entry.name;
      const childRel = relDir === '.' ? entry.name : `${relDir}/${entry.name}`;
      // A symlink is listed by what it points to, and only when that stays inside the root.
      const target = await root.resolve(childRel).catch(() => undefined);
      if (!target) continue;
      const targetInfo = await stat(target.absolute).catch(() => undefined);
      if (!targetInfo) continue;
      entries.push({ path: shown, isDirectory: targetInfo.isDirectory(), ...(targetInfo.isDirectory() ? {} : { sizeBytes: targetInfo.size }) });
      if (recursive && targetInfo.isDirectory() && !entry.isSymbolicLink()) await walk(childRel, shown);
    }
  };
  await walk(rel, '');
  return entries;
}

async function read(root: ConfinedRoot, filePath: string, offset: number, limit: number): Promise<FileResult> {
  const { handle, rel } = await root.openFile(filePath, constants.O_RDONLY);
  try {
    const info = await handle.stat();
    if (info.isDirectory()) throw new KeelError('INVALID_ARGUMENT', `"${rel}" is a directory; use list_files`, { path: rel });
    if (info.size > MAX_FILE_BYTES) throw new KeelError('OUT_OF_RANGE', `file "${rel}" is ${info.size} bytes, over the ${MAX_FILE_BYTES}-byte limit`, { path: rel });
    const mimeType = IMAGE_TYPES[extname(rel).toLowerCase()];
    const bytes = await handle.readFile();
    if (mimeType) return { kind: 'image', path: rel, mimeType, dataUri: `data:${mimeType};base64,${bytes.toString('base64')}`, stamp: stampOf(info) };
    const lines = bytes.toString('utf8').split('\n');
    if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
    const sliced = offset > 1 || limit > 0;
    if (!sliced && info.size > MAX_READ_BYTES) {
      throw new KeelError('OUT_OF_RANGE', `file "${rel}" is ${info.size} bytes, over the ${MAX_READ_BYTES}-byte limit of one read; use offset/limit to read part of it`, { path: rel });
    }
    const from = Math.max(1, offset);
    const to = limit > 0 ? Math.min(lines.length, from + limit - 1) : lines.length;
    const content = lines.slice(from - 1, to).join('\n') + (to > 0 && to >= from ? '\n' : '');
    if (Buffer.byteLength(content) > MAX_READ_BYTES) throw new KeelError('OUT_OF_RANGE', `lines ${from}-${to} of "${rel}" are over the ${MAX_READ_BYTES}-byte limit of one read; narrow the range`, { path: rel });
    return { kind: 'text', path: rel, content, totalLines: lines.length, from, to, sliced, stamp: stampOf(info) };
  } finally {
    await handle.close();
  }
}

async function write(root: ConfinedRoot, filePath: string, produce: (existing: string | undefined) => string, readStamp: FileStamp | undefined): Promise<{ path: string; stamp: FileStamp }> {
  const { absolute, rel } = await root.resolve(filePath);
  const current = await stat(absolute).catch(() => undefined);
  if (current?.isDirectory()) throw new KeelError('INVALID_ARGUMENT', `"${rel}" is a directory`, { path: rel });
  checkUnchanged(rel, current ? stampOf(current) : undefined, readStamp);
  const existing = current ? await (async () => {
    const { handle } = await root.openFile(filePath, constants.O_RDONLY);
    try {
      return (await handle.readFile()).toString('utf8');
    } finally {
      await handle.close();
    }
  })() : undefined;
  const next = produce(existing);
  await root.makeParents(filePath);
  const { handle } = await root.openFile(filePath, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o644);
  try {
    await handle.writeFile(next);
    return { path: rel, stamp: stampOf(await handle.stat()) };
  } finally {
    await handle.close();
  }
}

/** Runs one file operation (the `files` activity). */
export async function runFileOperation(raw: FileOperation): Promise<FileResult> {
  const parsed = FileOperationSchema.safeParse(raw);
  if (!parsed.success) throw new KeelError('INVALID_ARGUMENT', `invalid file operation: ${describeZodError(parsed.error)}`);
  const operation = parsed.data;
  const root = await ConfinedRoot.open(resolve(operation.root));
  switch (operation.op) {
    case 'list':
      return { kind: 'list', entries: await list(root, operation.dirPath, operation.recursive) };
    case 'read':
      return read(root, operation.filePath, operation.offset, operation.limit);
    case 'stat': {
      const { absolute, rel } = await root.resolve(operation.filePath);
      const info = await stat(absolute).catch(() => undefined);
      return { kind: 'stat', path: rel, exists: info !== undefined, isDirectory: info?.isDirectory() ?? false, ...(info ? { stamp: stampOf(info) } : {}) };
    }
    case 'write': {
      const written = await write(root, operation.filePath, () => operation.content, operation.read);
      return { kind: 'written', ...written };
    }
    case 'edit': {
      const { absolute, rel } = await root.resolve(operation.filePath);
      if (!(await stat(absolute).catch(() => undefined))) throw new KeelError('NOT_FOUND', `file "${rel}" does not exist`, { path: rel });
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

