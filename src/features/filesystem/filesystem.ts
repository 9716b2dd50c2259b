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
import { KeelError } from '../../core/errors';
import { FileEditSchema, filesDoor, normalizeRel, type FileOperation, type FileResult, FileStampSchema, type FileStamp } from './files';
import { INJECTED_BY, type Part } from '../../core/messages';
import { defineMiddleware } from '../../middleware/define-middleware';
import type { ContributedTool, GenerateParams, MiddlewareContext } from '../../middleware/types';

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

/** The last read of a path: its stamp and the range read. */
const ReadEntrySchema = z.object({ stamp: FileStampSchema, offset: z.number(), limit: z.number() });
type ReadEntry = z.output<typeof ReadEntrySchema>;

/** What carries to the next run of a long run's chain: the read cache, oldest first. */
const FilesCarrySchema = z.array(z.tuple([z.string(), ReadEntrySchema]));

/** The tool names, with the configured prefix. */
interface ToolNames {
  list: string;
  read: string;
  write: string;
  edit: string;
}

/** What one run's Filesystem keeps: its root, its tool names, the read cache, what reads fetched, and the calls under way per path. */
interface FileSession {
  root: string;
  names: ToolNames;
  files: (operation: FileOperation) => Promise<FileResult>;
  /** Last read of each path (oldest first; at most CACHE_SIZE). */
  reads: Map<string, ReadEntry>;
  /** What reads fetched, for the next iteration's user message. */
  pending: Part[];
  /** Per path, the call under way: calls on one path run one after another. */
  queues: Map<string, Promise<unknown>>;
}

/** A fresh session for one run, its read cache restored from what the previous run of the chain carried. */
function fileSession(config: z.output<typeof FilesystemConfigSchema>, context: MiddlewareContext<z.output<typeof FilesCarrySchema>>): FileSession {
  const name = (base: string) => `${config.toolNamePrefix}${base}`;
  return {
    root: config.rootDirectory,
    names: { list: name('list_files'), read: name('read_file'), write: name('write_file'), edit: name('edit_file') },
    files: (operation) => context.activity(filesDoor, operation),
    reads: new Map(context.carried ?? []),
    pending: [],
    queues: new Map(),
  };
}

/** Remembers the last read of a path, forgetting the oldest past CACHE_SIZE. */
function remember(session: FileSession, path: string, entry: ReadEntry): void {
  session.reads.delete(path);
  session.reads.set(path, entry);
  if (session.reads.size > CACHE_SIZE) session.reads.delete(session.reads.keys().next().value!);
}

/** Runs `work` after the calls under way on the same path (a failed one does not stop the next). */
function serialized<T>(session: FileSession, path: string, work: () => Promise<T>): Promise<T> {
  const key = normalizeRel(path);
  const run = (session.queues.get(key) ?? Promise.resolve()).then(work, work);
  session.queues.set(
    key,
    run.then(
      () => undefined,
      () => undefined,
    ),
  );
  return run;
}

/** The file activity's answer, of the kind asked for (any other is keel's own error). */
function expectResult<K extends FileResult['kind']>(result: FileResult, kind: K): Extract<FileResult, { kind: K }> {
  if (result.kind !== kind) throw new KeelError('INTERNAL', `file activity answered ${result.kind}, expected ${kind}`);
  return result as Extract<FileResult, { kind: K }>;
}

/**
 * A write or an edit of a path, after the calls under way on it: sends the stamp of the
 * last read (the activity refuses a file changed since) and remembers the written file.
 */
function writeThrough(session: FileSession, path: string, operation: (read: { read?: FileStamp }) => FileOperation) {
  return serialized(session, path, async () => {
    const key = normalizeRel(path);
    const last = session.reads.get(key);
    const written = expectResult(await session.files(operation(last ? { read: last.stamp } : {})), 'written');
    remember(session, key, { stamp: written.stamp, offset: 0, limit: 0 });
    return written;
  });
}

/** list_files: the entries of a directory (the root by default), recursively if asked. */
function listTool(session: FileSession): ContributedTool {
  const { names, root } = session;
  return {
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
      return expectResult(await session.files({ op: 'list', root, dirPath, recursive }), 'list').entries;
    },
  };
}

/**
 * Reads a file for the model: an unchanged re-read of the same range answers UNCHANGED_STUB;
 * otherwise the content (text, or an image) waits in `pending` for the next iteration's user
 * message and the tool answers a summary.
 */
async function readFile(session: FileSession, { filePath, offset, limit }: z.output<typeof ReadInput>): Promise<string> {
  const { root } = session;
  const key = normalizeRel(filePath);
  const previous = session.reads.get(key);
  if (previous && previous.offset === offset && previous.limit === limit) {
    const now = expectResult(await session.files({ op: 'stat', root, filePath }), 'stat');
    if (now.stamp && now.stamp.mtimeMs === previous.stamp.mtimeMs && now.stamp.size === previous.stamp.size) return UNCHANGED_STUB;
  }
  const result = await session.files({ op: 'read', root, filePath, offset, limit });
  if (result.kind === 'image') {
    remember(session, key, { stamp: result.stamp, offset, limit });
    session.pending = [
      ...session.pending,
      { text: `\n\nread_file result ${result.mimeType} ${result.path}` },
      { media: { url: result.dataUri, contentType: result.mimeType } },
    ];
    return `File ${result.path} read successfully, see contents below.`;
  }
  const text = expectResult(result, 'text');
  remember(session, key, { stamp: text.stamp, offset, limit });
  const range = text.sliced ? ` lines="${text.from}-${text.to}"` : '';
  session.pending = [...session.pending, { text: `<read_file path="${text.path}"${range} totalLines="${text.totalLines}">\n${text.content}</read_file>` }];
  return text.sliced
    ? `File ${text.path} read successfully (lines ${text.from}-${text.to} of ${text.totalLines} total). See contents below.`
    : `File ${text.path} read successfully (${text.totalLines} lines). See contents below.`;
}

/** read_file: reads a file after the calls under way on it (see readFile). */
function readTool(session: FileSession): ContributedTool {
  const { names } = session;
  return {
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
      const read = parsed(ReadInput, input, names.read);
      return serialized(session, read.filePath, () => readFile(session, read));
    },
  };
}

/** write_file: writes a file, creating its directories; overwriting one needs a read of it, unchanged since. */
function writeTool(session: FileSession): ContributedTool {
  const { names, root } = session;
  return {
    definition: {
      name: names.write,
      description: 'Writes a file, creating its directories. Overwriting a file needs a read_file of it first.',
      inputSchema: { type: 'object', properties: { filePath: { type: 'string' }, content: { type: 'string' } }, required: ['filePath', 'content'] },
    },
    run: async (input) => {
      const { filePath, content } = parsed(WriteInput, input, names.write);
      const written = await writeThrough(session, filePath, (read) => ({ op: 'write', root, filePath, content, ...read }));
      return `File ${written.path} written successfully.`;
    },
  };
}

/** edit_file: replaces exact strings in a file read before, in order, all or nothing. */
function editTool(session: FileSession): ContributedTool {
  const { names, root } = session;
  return {
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
      const written = await writeThrough(session, filePath, (read) => ({ op: 'edit', root, filePath, edits, ...read }));
      return `Successfully applied ${written.edits ?? edits.length} edit(s) to ${written.path}.`;
    },
  };
}

/** The iteration's conversation with what reads fetched since the last one, as one user message marked as Filesystem's. */
function withReads(session: FileSession, params: GenerateParams): GenerateParams {
  if (session.pending.length === 0) return params;
  const injected = {
    role: 'user' as const,
    content: session.pending,
    metadata: { [FILESYSTEM_MESSAGE_MARKER]: session.names.read, [INJECTED_BY]: 'filesystem' },
  };
  session.pending = [];
  return { ...params, messages: [...params.messages, injected] };
}

/** Filesystem: `use: [filesystem({ rootDirectory: './workspace', allowWriteAccess: true })]` */
export const filesystem = defineMiddleware({
  name: 'filesystem',
  description: 'Lets the model list, read and (with write access) write and edit files under one root directory.',
  configSchema: FilesystemConfigSchema,
  carrySchema: FilesCarrySchema,
  create(config, context) {
    const session = fileSession(config, context);
    const tools = [listTool(session), readTool(session), ...(config.allowWriteAccess ? [writeTool(session), editTool(session)] : [])];
    const own = new Set(tools.map((tool) => tool.definition.name));
    return {
      tools,
      // The read cache goes on into the next run of a long run's chain.
      carry: () => [...session.reads.entries()],
      // Failures of these tools (bad input, a path outside the root, a missing file) are the model's to fix.
      coversToolError: (toolName) => own.has(toolName),
      wrapGenerate: (params, next) => next(withReads(session, params)),
    };
  },
});
