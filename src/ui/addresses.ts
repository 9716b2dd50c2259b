/** Where keel's HTTP servers (keel ui, keel codec-server) listen, and where the Temporal Web UI is. Node side. */
import type { KeelConfig } from '../config/schema';

/** True for an address only this machine reaches. */
export const isLoopback = (host: string) => host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);

/** The Temporal Web UI's address: `ui.temporalUiUrl`, else the embedded dev server's (when keel starts one). */
export function temporalUiUrlOf(config: Pick<KeelConfig, 'ui' | 'server'>): string | undefined {
  return config.ui.temporalUiUrl ?? (config.server.enabled ? `http://${config.server.ip}:${config.server.uiPort}` : undefined);
}
