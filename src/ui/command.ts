/** `keel ui`: the UI server in the foreground until SIGINT/SIGTERM. Node side. */
import type { KeelConfig } from '../config/schema';
import { waitForSignal } from '../node/signals';
import { startUiServer } from './server';

export async function runUi(config: KeelConfig, options: { host?: string; port?: number } = {}): Promise<number> {
  const ui = await startUiServer({ config, ...options });
  process.stderr.write(`keel: UI at ${ui.url} (Temporal at ${config.temporal.address}, namespace ${config.temporal.namespace}; Ctrl-C to stop)\n`);
  await waitForSignal();
  await ui.close();
  return 0;
}
