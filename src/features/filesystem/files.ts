/**
 * The shapes of the Filesystem operations (reference: genkit-middleware/filesystem): what the
 * workflow asks of the `files` activity and what it answers, and the activity's door. Pure: safe
 * in workflow code.
 */
import { z } from 'zod';
import { defineActivity } from '../../middleware/activity-door';

/** The reference's normalization of a model's path: trimmed, slashes, no leading `/`, cleaned; empty = the root. */
export function normalizeRel(path: string): string {
  const parts: string[] = [];
  for (const part of path.trim().replace(/\\/g, '/').split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..' && parts.length && parts[parts.length - 1] !== '..') parts.pop();
    else parts.push(part);
  }
  return parts.length ? parts.join('/') : '.';
}

/** A file's identity for the read cache: a write or edit needs the file unchanged since it was read. */
export const FileStampSchema = z.object({ mtimeMs: z.number(), size: z.number() });
export type FileStamp = z.infer<typeof FileStampSchema>;

/** One entry of `list_files`. */
export const FileEntrySchema = z.object({ path: z.string(), isDirectory: z.boolean(), sizeBytes: z.number().optional() });
export type FileEntry = z.infer<typeof FileEntrySchema>;

/** One edit of `edit_file`. */
export const FileEditSchema = z.object({ oldString: z.string(), newString: z.string(), replaceAll: z.boolean().optional() });
export type FileEdit = z.infer<typeof FileEditSchema>;

/** A file operation the workflow asks for (the `files` activity). */
export const FileOperationSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('list'), root: z.string(), dirPath: z.string().default('.'), recursive: z.boolean().default(false) }),
  z.object({ op: z.literal('read'), root: z.string(), filePath: z.string(), offset: z.number().int().default(0), limit: z.number().int().default(0) }),
  z.object({ op: z.literal('stat'), root: z.string(), filePath: z.string() }),
  z.object({
    op: z.literal('write'),
    root: z.string(),
    filePath: z.string(),
    content: z.string(),
    /** The stamp of the last read of this file in the run (absent: never read). */
    read: FileStampSchema.optional(),
  }),
  z.object({ op: z.literal('edit'), root: z.string(), filePath: z.string(), edits: z.array(FileEditSchema).min(1), read: FileStampSchema.optional() }),
]);
export type FileOperation = z.input<typeof FileOperationSchema>;

/** What a file operation answers. */
export const FileResultSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('list'), entries: z.array(FileEntrySchema) }),
  z.object({
    kind: z.literal('text'),
    path: z.string(),
    content: z.string(),
    totalLines: z.number().int(),
    from: z.number().int(),
    to: z.number().int(),
    sliced: z.boolean(),
    stamp: FileStampSchema,
  }),
  z.object({ kind: z.literal('image'), path: z.string(), mimeType: z.string(), dataUri: z.string(), stamp: FileStampSchema }),
  z.object({ kind: z.literal('stat'), path: z.string(), exists: z.boolean(), isDirectory: z.boolean(), stamp: FileStampSchema.optional() }),
  z.object({ kind: z.literal('written'), path: z.string(), stamp: FileStampSchema, edits: z.number().int().optional() }),
]);
export type FileResult = z.infer<typeof FileResultSchema>;

/** The `files` activity: one operation on a root directory, every path confined to it (heartbeated). */
export const filesDoor = defineActivity({
  name: 'files',
  input: FileOperationSchema,
  output: FileResultSchema,
  describe: (operation) => `file operation ${operation.op}`,
});

/** Applies edits in order, each on the result of the ones before; any failing edit fails them all ("edit i: ..."). */
export function applyEdits(text: string, edits: readonly FileEdit[]): string {
  return edits.reduce((current, edit, index) => {
    const fail = (why: string) => {
      throw new Error(`edit ${index + 1}: ${why}`);
    };
    if (edit.oldString === '') fail('oldString is required');
    if (edit.oldString === edit.newString) fail('oldString and newString are identical');
    const count = current.split(edit.oldString).length - 1;
    if (count === 0) fail('oldString not found in the file; it must match the file byte-for-byte, including whitespace and indentation');
    if (count > 1 && !edit.replaceAll) fail(`oldString matches ${count} locations; add surrounding context to make it unique, or set replaceAll=true`);
    return edit.replaceAll ? current.split(edit.oldString).join(edit.newString) : current.replace(edit.oldString, () => edit.newString);
  }, text);
}
