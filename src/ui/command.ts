/**
 * `keel ui` and `keel codec-server`: a server in the foreground until SIGINT/SIGTERM. What keeps
 * one from starting (nothing at the Temporal address, a port another process holds) is said in
 * one line naming the address and the setting that changes it. Node side.
 */
import type { KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import { waitForSignal } from '../node/signals';

import { ServerError } from '../server/server-error';
import { temporalRefusal, tlsMismatch } from '../worker/connect';
import { startCodecServer } from './codec-server';
import { servedLines, startUiServer } from './server';
import { KeelClient } from '../client/keel-client';
import { keelVersion } from '../node/package-root';
import { assertMcpServable, serveMcpStdio } from '../protocols/mcp';
import { loadExposedAgents } from '../protocols/exposed-agents';

/** `--host` and `--port` of the command line, over the config's. */
type ListenOptions = { host?: string; port?: number };

/** A failure to listen (the port held, the address not this machine's) as one line; any other error as it is. */
function listenFailure(error: unknown, { server, host, port, setting }: { server: string; host: string; port: number; setting: string }): unknown {
  const { code, syscall } = error as NodeJS.ErrnoException;
  if (syscall !== 'listen') return error;
  const why =
    code === 'EADDRINUSE'
      ? 'another process already listens there'
      : code === 'EACCES'
        ? 'not permitted (ports below 1024 need privileges)'
        : code === 'EADDRNOTAVAIL'
          ? 'this machine has no such address'
          : (code ?? (error as Error).message);
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new ServerError(`${server} cannot listen on ${address}: ${why}; give it another port with --port (0: a free one) or ${setting}`);
}

/** `keel ui`: the UI server, once Temporal is seen to accept connections. */
export async function runUi(config: KeelConfig, options: ListenOptions = {}): Promise<number> {
  const address = config.temporal.address!;
  const refused = await temporalRefusal(address, 2000);
  if (refused)
    throw new ServerError(`cannot reach Temporal at ${address}: ${refused}; start one with npx keel dev (or npx keel server), or set temporal.address`);
  let ui;
  try {
    ui = await startUiServer({ config, ...options });
  } catch (error) {
    const listen = listenFailure(error, { server: 'the UI', host: options.host ?? config.ui.host, port: options.port ?? config.ui.port, setting: 'ui.port' });
    if (listen !== error || KeelError.isInstance(error)) throw listen;
    // Something accepts connections at the address but did not answer as Temporal: TLS on one side only, said as the config error it is.
    throw (await tlsMismatch(config)) ?? error;
  }
  const signalled = waitForSignal(); // before saying it is up: a signal sent on reading the line stops it cleanly
  process.stderr.write(`keel: UI at ${ui.url} (Temporal at ${config.temporal.address}, namespace ${config.temporal.namespace}; Ctrl-C to stop)\n`);
  for (const line of servedLines(ui)) process.stderr.write(`${line}\n`);
  if (ui.serveProblem) process.stderr.write(`keel: ${ui.serveProblem}\n`);
  await signalled;
  await ui.close();
  return 0;
}

/** `keel codec-server`: the Web UI's remote codec endpoint in the foreground until SIGINT/SIGTERM. */
export async function runCodecServer(config: KeelConfig, options: ListenOptions = {}): Promise<number> {
  let server;
  try {
    server = await startCodecServer({ config, ...options });
  } catch (error) {
    throw listenFailure(error, {
      server: 'the codec server',
      host: options.host ?? config.codecServer.host,
      port: options.port ?? config.codecServer.port,
      setting: 'codecServer.port',
    });
  }
  const signalled = waitForSignal(); // before saying it is up: a signal sent on reading the line stops it cleanly
  process.stderr.write(
    `keel: codec server at ${server.url} (POST /decode, /encode); set it as the Web UI's codec endpoint (temporal server start-dev --ui-codec-endpoint ${server.url}, or the UI's Codec Server settings); Ctrl-C to stop\n`,
  );
  await signalled;
  await server.close();
  return 0;
}

/**
 * `keel mcp`: the agents `serve.agents` exposes as MCP tools over stdio, for desktop and editor
 * clients that start it, until the client closes stdin. stdout is the protocol's; keel says
 * nothing there.
 */
export async function runMcp(config: KeelConfig): Promise<number> {
  const agents = await loadExposedAgents(config);
  assertMcpServable();
  if (!agents.length) process.stderr.write('keel: serve.agents in temporal.yaml names no agent: the MCP server lists no tools\n');
  const client = await KeelClient.connect(config, { identity: `keel-mcp ${process.pid}` });
  try {
    await serveMcpStdio({ client, agents, version: keelVersion() });
  } finally {
    await client.close();
  }
  return 0;
}
