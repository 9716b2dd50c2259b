/** `keel ui`: the UI server in the foreground until SIGINT/SIGTERM. Node side. */
import type { KeelConfig } from '../config/schema';
import { waitForSignal } from '../node/signals';
import { startCodecServer } from './codec-server';
import { startUiServer } from './server';

export async function runUi(config: KeelConfig, options: { host?: string; port?: number } = {}): Promise<number> {
  const ui = await startUiServer({ config, ...options });
  process.stderr.write(`keel: UI at ${ui.url} (Temporal at ${config.temporal.address}, namespace ${config.temporal.namespace}; Ctrl-C to stop)\n`);
  await waitForSignal();
  await ui.close();
  return 0;
}

/** `keel codec-server`: the Web UI's remote codec endpoint in the foreground until SIGINT/SIGTERM. */
export async function runCodecServer(config: KeelConfig, options: { host?: string; port?: number } = {}): Promise<number> {
  const server = await startCodecServer({ config, ...options });
  process.stderr.write(
    `keel: codec server at ${server.url} (POST /decode, /encode); set it as the Web UI's codec endpoint (temporal server start-dev --ui-codec-endpoint ${server.url}, or the UI's Codec Server settings); Ctrl-C to stop\n`,
  );
  await waitForSignal();
  await server.close();
  return 0;
}
