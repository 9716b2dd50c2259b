/**
 * The Temporal connection of the commands that talk to a run: connect (a refusal said as what to
 * do about it), run a command with a client, warn when no worker polls. The client module loads
 * only for these commands. Node side.
 */
import { ConfigError } from '../config/load';
import type { KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import type { RunStatus } from '../core/run';
import type { KeelClient, RunHandle } from '../client/keel-client';
import { later, refuse, type CliOptions } from './common';

/** Warns on stderr when no worker polls the task queue: a run there waits until one starts. */
export async function warnWithoutWorkers(client: KeelClient, config: KeelConfig, command: string): Promise<boolean> {
  const polling = await client.workersPolling().catch(() => undefined);
  if (polling !== 0) return false;
  process.stderr.write(
    `keel ${command}: no worker is polling task queue "${config.taskQueue}" at ${config.temporal.address}; the run waits, durably, until one starts (npx keel worker)\n`,
  );
  return true;
}

/** The client module: loaded by the commands that talk to Temporal, since it loads the Temporal client. */
function clientModule(): typeof import('../client/keel-client') {
  return later<typeof import('../client/keel-client')>('../client/keel-client');
}

/** The KeelError a failed call or run comes down to. */
export function runErrorOf(error: unknown): KeelError {
  return clientModule().runErrorOf(error);
}

export async function connect(config: KeelConfig): Promise<KeelClient> {
  try {
    return await clientModule().KeelClient.connect(config);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    // A server that answers, but not as configured (TLS on one side only), is a config error: say which.
    const mismatch = await later<typeof import('../worker/connect')>('../worker/connect').tlsMismatch(config);
    if (mismatch) throw mismatch;
    // A refusal known at once already says where and why (src/worker/connect.ts).
    const why =
      KeelError.isInstance(error) && error.status === 'UNAVAILABLE'
        ? error.message
        : `cannot reach Temporal at ${config.temporal.address}: ${(error as Error).message}`;
    throw new KeelError('UNAVAILABLE', `${why}. Start one with \`npx keel server\` (or \`npx keel dev\`).`);
  }
}

/** Runs `work` with a connected client, closing it afterwards. */
export async function withClient<T>(config: KeelConfig, work: (client: KeelClient) => Promise<T>): Promise<T> {
  const client = await connect(config);
  try {
    return await work(client);
  } finally {
    await client.close();
  }
}

/** `withClient`, and what `work` throws is refused as `command`'s failure (exit 1; with --json, on stdout too). */
export function withClientRefusing(
  config: KeelConfig,
  options: Pick<CliOptions, 'json'>,
  command: string,
  work: (client: KeelClient) => Promise<number>,
): Promise<number> {
  return withClient(config, async (client) => {
    try {
      return await work(client);
    } catch (error) {
      return refuse(options, command, runErrorOf(error));
    }
  });
}

/** Reads the status query, bounded in time; undefined when no worker answers. */
export async function tryStatus(client: KeelClient, handle: RunHandle, timeoutMs = 5000): Promise<RunStatus | undefined> {
  try {
    return await client.temporal.withDeadline(Date.now() + timeoutMs, () => handle.status());
  } catch {
    return undefined;
  }
}
