/**
 * The tools of Model Context Protocol servers as keel tools, with the official TypeScript SDK
 * (`@modelcontextprotocol/sdk`, an optional peer dependency: install it to use `mcpServers`).
 * A worker connects to each configured server once (a child process over stdio, or streamable
 * HTTP), lists its tools and registers each as `<toolPrefix><tool>`; every call is then a tool
 * activity on that one connection, with the call's idempotency key, run and attempt in the
 * request's `_meta`. A connection that closes (the server crashed, the network dropped) fails
 * the call as retryable and the next attempt connects again. Node side.
 */
import { msToNumber } from '@temporalio/common/lib/time';
import { z } from 'zod';
import { InfrastructureError } from '../activities/infrastructure-error';
import { KeelError } from '../core/errors';
import { toolFail } from '../core/interrupts';
import type { McpServerConfig } from '../config/schema';
import { defineTool, type Tool, type ToolContext } from '../define';
import { missingPackage, requireModule } from '../node/require-ts';

/** The keys of a call's `_meta` that carry keel's context to the server. */
export const MCP_META = { idempotencyKey: 'keel/idempotencyKey', runId: 'keel/runId', attempt: 'keel/attempt' } as const;

/** The SDK package keel loads when a config lists MCP servers. */
const SDK = '@modelcontextprotocol/sdk';

/** JSON-RPC error codes of the MCP SDK (its ErrorCode enum). */
const CONNECTION_CLOSED = -32000;
const REQUEST_TIMEOUT = -32001;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;

/** What keel uses of the SDK's Client. */
interface McpClient {
  connect(transport: unknown): Promise<void>;
  listTools(params?: { cursor?: string }): Promise<{ tools: McpToolInfo[]; nextCursor?: string }>;
  callTool(
    params: { name: string; arguments: Record<string, unknown>; _meta: Record<string, unknown> },
    resultSchema: undefined,
    options: { signal: AbortSignal; timeout: number; resetTimeoutOnProgress: boolean },
  ): Promise<McpCallResult>;
  close(): Promise<void>;
  onclose?: () => void;
  onerror?: (error: Error) => void;
}

/** The SDK's stdio transport refuses a message over its read buffer (10 MiB by default). */
const OVERSIZED = /ReadBuffer exceeded maximum size of (\d+) bytes/;

/** True for a zod error (the SDK checks every result against its schema with zod, classic or mini). */
function isSchemaError(error: unknown): error is { issues: Array<{ path: Array<string | number>; message: string }> } {
  const issues = (error as { issues?: unknown })?.issues;
  return (
    error instanceof Error &&
    Array.isArray(issues) &&
    issues.length > 0 &&
    issues.every((issue) => Array.isArray((issue as { path?: unknown })?.path) && typeof (issue as { message?: unknown }).message === 'string')
  );
}

interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

export interface McpCallResult {
  content?: Array<{ type: string; text?: string; [field: string]: unknown }>;
  structuredContent?: unknown;
  isError?: boolean;
}

/** Loads a module of the SDK from the project, saying how to install it when it is missing. */
function sdk<T>(subpath: string, baseDir: string): T {
  try {
    return requireModule<T>(`${SDK}/${subpath}`, `${baseDir}/temporal.yaml`);
  } catch (error) {
    // Only the SDK itself missing says "install it"; a module the SDK lacks is its own error.
    if (!missingPackage(error, [SDK])) throw error;
    throw new Error(`mcpServers needs ${SDK}, which is not installed in ${baseDir}: npm install ${SDK}`);
  }
}

/** The longest wait a timer takes: the call's activity timeout is what bounds it. */
const NO_TIMEOUT = 2_147_483_647;

/** One MCP server of a worker: its connection (opened on demand, again after it closed) and its tools. */
export class McpServerConnection {
  private client: Promise<McpClient> | undefined;
  /** Counts connections, so a late close of an old one does not drop a newer one. */
  private generation = 0;
  private closed = false;

  /** The errors the current connection's transport reported (an oversized message, then the broken rest of its line). */
  private transportErrors: { generation: number; errors: Error[] } = { generation: 0, errors: [] };

  constructor(
    readonly config: McpServerConfig,
    private readonly baseDir: string,
  ) {}

  /** How long one call may take: the server's `callTimeout`. */
  private get callTimeoutMs(): number {
    return msToNumber(this.config.callTimeout);
  }

  /** Where the server is, for messages. */
  private get where(): string {
    return 'url' in this.config ? this.config.url : [this.config.command, ...this.config.args].join(' ');
  }

  private connect(): Promise<McpClient> {
    if (this.closed) return Promise.reject(new KeelError('CANCELLED', `MCP server "${this.config.name}": the worker is shutting down`));
    if (!this.client) {
      const opening = this.open();
      this.client = opening;
      opening.catch(() => {
        if (this.client === opening) this.client = undefined;
      });
    }
    return this.client;
  }

  private async open(): Promise<McpClient> {
    const { Client } = sdk<{ Client: new (info: { name: string; version: string }) => McpClient }>('client/index.js', this.baseDir);
    let transport: unknown;
    if ('url' in this.config) {
      const { StreamableHTTPClientTransport } = sdk<{ StreamableHTTPClientTransport: new (url: URL, options: { requestInit: RequestInit }) => unknown }>(
        'client/streamableHttp.js',
        this.baseDir,
      );
      transport = new StreamableHTTPClientTransport(new URL(this.config.url), { requestInit: { headers: this.config.headers } });
    } else {
      const { StdioClientTransport, getDefaultEnvironment } = sdk<{
        StdioClientTransport: new (params: { command: string; args: string[]; env: Record<string, string>; cwd: string }) => unknown;
        getDefaultEnvironment: () => Record<string, string>;
      }>('client/stdio.js', this.baseDir);
      transport = new StdioClientTransport({
        command: this.config.command,
        args: this.config.args,
        env: { ...getDefaultEnvironment(), ...this.config.env },
        cwd: this.config.cwd ?? this.baseDir,
      });
    }
    const client = new Client({ name: 'keel', version: '1' });
    const generation = ++this.generation;
    client.onclose = () => {
      // The next call connects again (a crashed stdio server is started anew).
      if (this.generation === generation) this.client = undefined;
    };
    client.onerror = (error) => {
      const earlier = this.transportErrors.generation === generation ? this.transportErrors.errors : [];
      this.transportErrors = { generation, errors: [...earlier, error].slice(-5) };
    };
    try {
      await client.connect(transport);
    } catch (error) {
      await client.close().catch(() => undefined);
      throw new Error(`MCP server "${this.config.name}" (${this.where}) could not be reached: ${reasonOf(error)}`);
    }
    return client;
  }

  /** Drops the connection after a failure: closes it (a stdio server's process with it), so the next call starts a new one. */
  private drop(): void {
    const dropped = this.client;
    this.client = undefined;
    void dropped?.then((client) => client.close()).catch(() => undefined);
  }

  /** Lists the server's tools (every page) as keel tools, under the prefix, filtered by the allow-list. */
  async tools(): Promise<Tool[]> {
    const client = await this.connect();
    const listed: McpToolInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      listed.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    const allowed = this.config.tools;
    if (allowed) {
      const missing = allowed.filter((name) => !listed.some((tool) => tool.name === name));
      if (missing.length)
        throw new Error(
          `tools: the server has no tool ${missing.map((name) => `"${name}"`).join(', ')}; it has: ${listed.map((tool) => tool.name).join(', ') || '(none)'}`,
        );
    }
    const prefix = this.config.toolPrefix ?? `${this.config.name}_`;
    return listed.filter((tool) => !allowed || allowed.includes(tool.name)).map((tool) => this.asTool(tool, `${prefix}${tool.name}`));
  }

  private asTool(info: McpToolInfo, name: string): Tool {
    return defineTool({
      name,
      description: info.description ?? `${info.name} of MCP server "${this.config.name}"`,
      input: inputSchemaOf(info.inputSchema),
      run: (input, context) => this.call(info.name, (input ?? {}) as Record<string, unknown>, context),
    });
  }

  /** Calls a tool of the server: its output, a model-visible error for the server's own tool errors, a status for the rest. */
  async call(toolName: string, args: Record<string, unknown>, context: ToolContext): Promise<unknown> {
    let client: McpClient;
    try {
      client = await this.connect();
    } catch (error) {
      if (KeelError.isInstance(error)) throw error;
      throw new InfrastructureError((error as Error).message);
    }
    const generation = this.generation;
    let result: McpCallResult;
    try {
      result = await client.callTool(
        {
          name: toolName,
          arguments: args,
          _meta: { [MCP_META.idempotencyKey]: context.idempotencyKey, [MCP_META.runId]: context.runId, [MCP_META.attempt]: context.attempt },
        },
        undefined,
        // The server's own bound, well under the activity's (a server that never answers would hold every attempt to its end).
        { signal: context.signal, timeout: Math.min(this.callTimeoutMs, NO_TIMEOUT), resetTimeoutOnProgress: true },
      );
    } catch (error) {
      throw this.callError(toolName, error, context.signal, generation);
    }
    if (result.isError) throw toolFail(textOf(result) || `MCP tool "${toolName}" failed`);
    return outputOf(result);
  }

  /**
   * What a failed call means: the server's answer that is not MCP (malformed, too large) is a
   * protocol error the model is told of, not retried; a JSON-RPC error is the server's word; a
   * timeout is the server's `callTimeout`; a dropped connection (the server crashed, the network
   * dropped) is closed and retried on a new one.
   */
  private callError(toolName: string, error: unknown, signal: AbortSignal, generation: number): Error {
    if (signal.aborted) return error as Error;
    const server = `MCP server "${this.config.name}" (${this.where})`;
    if (isSchemaError(error)) {
      const issues = error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
      return toolFail(`${server} answered tool "${toolName}" with a malformed result (not an MCP CallToolResult): ${issues}`);
    }
    const reported = this.transportErrors.generation === generation ? this.transportErrors.errors : [];
    const transport = reported.at(-1);
    const oversized = reported.map((reportedError) => OVERSIZED.exec(reportedError.message)).find((match) => match !== null);
    if (oversized) {
      this.drop();
      return toolFail(
        `${server} answered tool "${toolName}" with a message over the ${Math.round(Number(oversized[1]) / (1024 * 1024))} MiB the MCP SDK reads over stdio; the call is not repeated (ask for less, or page the output)`,
      );
    }
    const code = (error as { code?: unknown }).code;
    const message = `MCP tool "${toolName}" of server "${this.config.name}" (${this.where}): ${reasonOf(error)}`;
    switch (code) {
      case INVALID_PARAMS:
        return new KeelError('INVALID_ARGUMENT', message);
      case METHOD_NOT_FOUND:
        return new KeelError('NOT_FOUND', message);
      case REQUEST_TIMEOUT:
        return new KeelError(
          'DEADLINE_EXCEEDED',
          `${server} did not answer tool "${toolName}" within ${this.config.callTimeout} (its callTimeout); the call was cancelled`,
        );
      case CONNECTION_CLOSED:
        this.drop();
        return new InfrastructureError(transport ? `${message} (${reasonOf(transport)})` : message);
      default:
        // A JSON-RPC error the server answered with is the server's word; anything else (a
        // dropped connection, a refused HTTP request) is retried on a new connection.
        if (typeof code === 'number') return new KeelError('INTERNAL', message);
        this.drop();
        return new InfrastructureError(message);
    }
  }

  /** Closes the connection (and a stdio server's process). */
  async close(): Promise<void> {
    this.closed = true;
    const client = await this.client?.catch(() => undefined);
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }
}

/** An error's message, with its cause's when it has one (Node's "fetch failed" says why only there). */
function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = (error as { cause?: unknown })?.cause;
  const detail = cause instanceof Error ? `${(cause as NodeJS.ErrnoException).code ?? ''} ${cause.message}`.trim() : undefined;
  return detail && !message.includes(detail) ? `${message} (${detail})` : message;
}

/** A tool's JSON Schema as a zod schema keel validates arguments with; one zod cannot read takes any object. */
function inputSchemaOf(schema: Record<string, unknown>): z.ZodType {
  try {
    return z.fromJSONSchema(schema);
  } catch {
    return z.record(z.string(), z.unknown());
  }
}

function textOf(result: McpCallResult): string {
  return (result.content ?? []).flatMap((part) => (part.type === 'text' && typeof part.text === 'string' ? [part.text] : [])).join('\n');
}

/**
 * The call's output: its structured content, else its text, else its content parts as keel
 * parts (`{ content: Part[] }`): a text part as `{ text }`, an image as a media part with a
 * data URI (providers send it to the model as an image), anything else (audio, resources) as
 * the server sent it.
 */
export function outputOf(result: McpCallResult): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const content = result.content ?? [];
  if (content.every((part) => part.type === 'text')) return textOf(result);
  return {
    content: content.map((part) => {
      if (part.type === 'text' && typeof part.text === 'string') return { text: part.text };
      if (part.type === 'image' && typeof part.data === 'string' && typeof part.mimeType === 'string')
        return { media: { url: `data:${part.mimeType};base64,${part.data}`, contentType: part.mimeType } };
      return part;
    }),
  };
}

/** Connects to each configured server and lists its tools; `close` ends every connection. */
export async function connectMcpServers(servers: readonly McpServerConfig[], baseDir: string): Promise<{ tools: Tool[][]; close: () => Promise<void> }> {
  const connections = servers.map((server) => new McpServerConnection(server, baseDir));
  const close = async () => {
    await Promise.all(connections.map((connection) => connection.close()));
  };
  const settled = await Promise.allSettled(connections.map((connection) => connection.tools()));
  const failed = settled.findIndex((outcome) => outcome.status === 'rejected');
  if (failed >= 0) {
    await close();
    const reason = (settled[failed] as PromiseRejectedResult).reason as Error;
    throw Object.assign(new Error(reason.message), { serverIndex: failed });
  }
  return { tools: settled.map((outcome) => (outcome as PromiseFulfilledResult<Tool[]>).value), close };
}
