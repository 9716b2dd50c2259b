#!/usr/bin/env node
// A small Model Context Protocol server (the official TypeScript SDK): a notebook with
// `add_note` and `list_notes`. keel registers its tools when temporal.yaml lists it:
//
//   mcpServers:
//     - { name: notes, command: node, args: [examples/mcp/notes-server.mjs] }
//
// and an agent uses them as `notes_add_note` and `notes_list_notes`. `--http <port>` serves
// the same tools over streamable HTTP instead (`- { name: notes, url: http://127.0.0.1:<port>/mcp }`).
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** The notebook, shared by every connection to this process. */
const notes = [];

/** An MCP server with the notebook's tools; `extend(server)` may add more. */
export function createNotesServer(extend = () => undefined) {
  const server = new McpServer({ name: 'notes', version: '1.0.0' });
  server.registerTool(
    'add_note',
    { description: 'Adds a line to the notebook.', inputSchema: { text: z.string().describe('the line to add') } },
    async ({ text }, extra) => {
      notes.push(text);
      // keel sends the call's idempotency key (the same on every attempt) in the request's _meta.
      const key = extra._meta?.['keel/idempotencyKey'];
      return {
        content: [{ type: 'text', text: `noted (${notes.length})` }],
        structuredContent: { count: notes.length, idempotencyKey: key ?? null, pid: process.pid },
      };
    },
  );
  server.registerTool('list_notes', { description: 'Lists the notebook.', inputSchema: {} }, async () => ({
    content: [{ type: 'text', text: notes.join('\n') || '(empty)' }],
  }));
  extend(server);
  return server;
}

/** Serves `makeServer()` over stdio, or over streamable HTTP on `port` (0: any free port, printed on stdout). */
export async function serve(makeServer, argv = process.argv.slice(2)) {
  const http = argv.indexOf('--http');
  if (http < 0) {
    await makeServer().connect(new StdioServerTransport());
    return;
  }
  const port = Number(argv[http + 1] ?? 0);
  const listener = createServer(async (request, response) => {
    // Stateless: a server and a transport per request, the notebook shared.
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request, response);
  });
  listener.listen(port, '127.0.0.1', () => process.stdout.write(`listening ${listener.address().port}\n`));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await serve(() => createNotesServer());
