/**
 * Calls a keel agent as an MCP tool with the official MCP TypeScript SDK (docs/mcp.md, "keel
 * agents as MCP tools"): `npx tsx examples/mcp/ask-agent.ts http://127.0.0.1:8234/mcp <agent> <prompt...>`.
 * Prints the run's progress to stderr and its answer to stdout; a hold is approved when asked
 * (answer the prompt on the terminal), and Ctrl-C cancels the call, which aborts the run.
 */
import { createInterface } from 'node:readline/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';

async function main(): Promise<number> {
  const [url, agent, ...words] = process.argv.slice(2);
  if (!url || !agent || !words.length) {
    process.stderr.write('usage: npx tsx examples/mcp/ask-agent.ts <url of /mcp> <agent> <prompt...>\n');
    return 2;
  }
  // Elicitation lets keel ask here when the run holds a call for approval.
  const client = new Client({ name: 'ask-agent', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const terminal = createInterface({ input: process.stdin, output: process.stderr });
    const answer = await terminal.question(`${request.params.message} [y/N] `);
    terminal.close();
    return { action: 'accept', content: { approved: /^y/i.test(answer.trim()) } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const cancel = new AbortController();
  process.once('SIGINT', () => cancel.abort());
  try {
    const result = (await client.callTool({ name: agent, arguments: { prompt: words.join(' ') } }, undefined, {
      signal: cancel.signal,
      // A run may wait long for a person: progress keeps the call alive.
      resetTimeoutOnProgress: true,
      onprogress: ({ message }) => process.stderr.write(`… ${message ?? ''}\n`),
    })) as CallToolResult;
    for (const part of result.content) if (part.type === 'text') process.stdout.write(`${part.text}\n`);
    return result.isError ? 1 : 0;
  } finally {
    await client.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`ask-agent: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
