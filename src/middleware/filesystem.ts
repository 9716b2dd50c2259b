/**
 * Filesystem (reference: genkit-middleware/filesystem): gives the model `list_files` and
 * `read_file`, and with write access `write_file` and `edit_file`, over one root directory.
 * Every path is confined to the root by the file activity. What `read_file` reads reaches the
 * model as a user message at the start of the next iteration (the tool answers a summary); an
 * unchanged re-read answers a short stub instead. Writing over a file or editing it needs a
 * read of it, unchanged since. Calls on one path run one after another. Failures of these
 * tools answer the model as `{ "error": ... }`. The read cache is run state: activities'
 * results are in history, so a worker restart rebuilds it. Runs in the workflow.
 */
import { z } from 'zod';
import { KeelError } from '../core/errors';
import { FileEditSchema, normalizeRel, type FileOperation, type FileResult, type FileStamp } from '../core/files';
import { INJECTED_BY, type Part } from '../core/messages';
import { defineMiddleware } from './define-middleware';
import type { ContributedTool } from './types';

/** Metadata key marking the user message that carries what read_file read (the reference's). */
export const FILESYSTEM_MESSAGE_MARKER = 'filesystemMiddlewareTool';

/** What an unchanged re-read answers. */
export const UNCHANGED_STUB =
  'File unchanged since last read. The content from the earlier read_file result in this conversation is still current; refer to that instead of re-reading.';

/** How many reads the cache remembers (oldest forgotten first). */
const CACHE_SIZE = 200;

/** Filesystem's config. */
export const FilesystemConfigSchema = z
  .object({
    /** The directory the tools work in (relative paths resolve against each worker's working directory). */
    rootDirectory: z.string().refine((root) => root.trim() !== '', 'rootDirectory is required'),
    /** Adds write_file and edit_file. */
    allowWriteAccess: z.boolean().default(false),
    /** Prefix of the tool names (`fs_` gives `fs_read_file`). */
    toolNamePrefix: z.string().default(''),
  })
  .strict();
export type FilesystemConfig = z.input<typeof FilesystemConfigSchema>;

const ListInput = z.object({ dirPath: z.string().default('.'), recursive: z.boolean().default(false) });
const ReadInput = z.object({ filePath: z.string().min(1), offset: z.number().int().min(0).default(0), limit: z.number().int().min(0).default(0) });
const WriteInput = z.object({ filePath: z.string().min(1), content: z.string() });
const EditInput = z.object({ filePath: z.string().min(1), edits: z.array(FileEditSchema).min(1) });

/** The input, parsed, or an error the model sees naming what was wrong. */
function parsed<T extends z.ZodType>(schema: T, input: unknown, tool: string): z.output<T> {
  const result = schema.safeParse(input ?? {});
  if (!result.success)
    throw new KeelError(
      'INVALID_ARGUMENT',
      `${tool}: invalid input: ${result.error.issues.map((issue) => `${issue.path.join('.') || '(input)'}: ${issue.message}`).join('; ')}`,
    );
  return result.data;
}

/** Filesystem: `use: [filesystem({ rootDirectory: './workspace', allowWriteAccess: true })]` */
export const filesystem = defineMiddleware({
  name: 'filesystem',
  description: 'Lets the model list, read and (with write access) write and edit files under one root directory.',
  configSchema: FilesystemConfigSchema,
  create(config, context) {
    const root = config.rootDirectory;
    const name = (base: string) => `${config.toolNamePrefix}${base}`;
    const names = { list: name('list_files'), read: name('read_file'), write: name('write_file'), edit: name('edit_file') };
    /** Last read of each path: its stamp and the range read. */
    const reads = new Map<string, { stamp: FileStamp; offset: number; limit: number }>(
      (context.carried as Array<[string, { stamp: FileStamp; offset: number; limit: number }]> | undefined) ?? [],
    );
    /** What reads fetched, for the next iteration's user message. */
    let pending: Part[] = [];
    /** Per path, the call under way: calls on one path run one after another. */
    const queues = new Map<string, Promise<unknown>>();

    const remember = (path: string, entry: { stamp: FileStamp; offset: number; limit: number }) => {
      reads.delete(path);
      reads.set(path, entry);
      if (reads.size > CACHE_SIZE) reads.delete(reads.keys().next().value!);
    };
    const serialized = <T>(path: string, work: () => Promise<T>): Promise<T> => {
      const key = normalizeRel(path);
      const run = (queues.get(key) ?? Promise.resolve()).then(work, work);
      queues.set(
        key,
        run.then(
          () => undefined,
          () => undefined,
        ),
      );
      return run;
    };
    const expect = <K extends FileResult['kind']>(result: FileResult, kind: K): Extract<FileResult, { kind: K }> => {
      if (result.kind !== kind) throw new KeelError('INTERNAL', `file activity answered ${result.kind}, expected ${kind}`);
      return result as Extract<FileResult, { kind: K }>;
    };
    /**
     * A write or an edit of a path, after the calls under way on it: sends the stamp of the
     * last read (the activity refuses a file changed since) and remembers the written file.
     */
    const writeThrough = (path: string, operation: (read: { read?: FileStamp }) => FileOperation) =>
      serialized(path, async () => {
        const key = normalizeRel(path);
        const last = reads.get(key);
        const written = expect(await context.files(operation(last ? { read: last.stamp } : {})), 'written');
        remember(key, { stamp: written.stamp, offset: 0, limit: 0 });
        return written;
      });

    const tools: ContributedTool[] = [
      {
        definition: {
          name: names.list,
          description: 'Lists the files and directories in a directory (the root by default), recursively if asked.',
          inputSchema: {
            type: 'object',
            properties: { dirPath: { type: 'string', description: 'Directory relative to the root; default the root.' }, recursive: { type: 'boolean' } },
          },
        },
        run: async (input) => {
          const { dirPath, recursive } = parsed(ListInput, input, names.list);
          return expect(await context.files({ op: 'list', root, dirPath, recursive }), 'list').entries;
        },
      },
      {
        definition: {
          name: names.read,
          description: 'Reads a file (text, or an image). Its content arrives in the next message; use offset/limit (lines) for part of a large file.',
          inputSchema: {
            type: 'object',
            properties: {
              filePath: { type: 'string' },
              offset: { type: 'number', description: '1-based first line (0 or 1: the beginning).' },
              limit: { type: 'number', description: 'Most lines to read (0: to the end).' },
            },
            required: ['filePath'],
          },
        },
        run: async (input) => {
          const { filePath, offset, limit } = parsed(ReadInput, input, names.read);
          return serialized(filePath, async () => {
            const key = normalizeRel(filePath);
            const previous = reads.get(key);
            if (previous && previous.offset === offset && previous.limit === limit) {
              const now = expect(await context.files({ op: 'stat', root, filePath }), 'stat');
              if (now.stamp && now.stamp.mtimeMs === previous.stamp.mtimeMs && now.stamp.size === previous.stamp.size) return UNCHANGED_STUB;
            }
            const result = await context.files({ op: 'read', root, filePath, offset, limit });
            if (result.kind === 'image') {
              remember(key, { stamp: result.stamp, offset, limit });
              pending = [
                ...pending,
                { text: `\n\nread_file result ${result.mimeType} ${result.path}` },
                { media: { url: result.dataUri, contentType: result.mimeType } },
              ];
              return `File ${result.path} read successfully, see contents below.`;
            }
            const text = expect(result, 'text');
            remember(key, { stamp: text.stamp, offset, limit });
            const range = text.sliced ? ` lines="${text.from}-${text.to}"` : '';
            pending = [...pending, { text: `<read_file path="${text.path}"${range} totalLines="${text.totalLines}">\n${text.content}</read_file>` }];
            return text.sliced
              ? `File ${text.path} read successfully (lines ${text.from}-${text.to} of ${text.totalLines} total). See contents below.`
              : `File ${text.path} read successfully (${text.totalLines} lines). See contents below.`;
          });
        },
      },
    ];
    if (config.allowWriteAccess) {
      tools.push(
        {
          definition: {
            name: names.write,
            description: 'Writes a file, creating its directories. Overwriting a file needs a read_file of it first.',
            inputSchema: { type: 'object', properties: { filePath: { type: 'string' }, content: { type: 'string' } }, required: ['filePath', 'content'] },
          },
          run: async (input) => {
            const { filePath, content } = parsed(WriteInput, input, names.write);
            const written = await writeThrough(filePath, (read) => ({ op: 'write', root, filePath, content, ...read }));
            return `File ${written.path} written successfully.`;
          },
        },
        {
          definition: {
            name: names.edit,
            description: 'Edits a file read before: each edit replaces oldString (exactly as in the file) by newString, in order; all or nothing.',
            inputSchema: {
              type: 'object',
              properties: {
                filePath: { type: 'string' },
                edits: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: { oldString: { type: 'string' }, newString: { type: 'string' }, replaceAll: { type: 'boolean' } },
                    required: ['oldString', 'newString'],
                  },
                },
              },
              required: ['filePath', 'edits'],
            },
          },
          run: async (input) => {
            const { filePath, edits } = parsed(EditInput, input, names.edit);
            const written = await writeThrough(filePath, (read) => ({ op: 'edit', root, filePath, edits, ...read }));
            return `Successfully applied ${written.edits ?? edits.length} edit(s) to ${written.path}.`;
          },
        },
      );
    }
    const own = new Set(tools.map((tool) => tool.definition.name));
    return {
      tools,
      // The read cache goes on into the next run of a long run's chain.
      carry: () => [...reads.entries()],
      // Failures of these tools (bad input, a path outside the root, a missing file) are the model's to fix.
      coversToolError: (toolName) => own.has(toolName),
      wrapGenerate: (params, next) => {
        if (pending.length === 0) return next(params);
        const injected = { role: 'user' as const, content: pending, metadata: { [FILESYSTEM_MESSAGE_MARKER]: names.read, [INJECTED_BY]: 'filesystem' } };
        pending = [];
        return next({ ...params, messages: [...params.messages, injected] });
      },
    };
  },
});
