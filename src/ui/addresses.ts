/** Where the Temporal Web UI is, for keel ui's links and the codec server's CORS. Node side. */
import type { KeelConfig } from '../config/schema';

/** The Temporal Web UI's address: `ui.temporalUiUrl`, else the embedded dev server's (when keel starts one). */
export function temporalUiUrlOf(config: Pick<KeelConfig, 'ui' | 'server'>): string | undefined {
  return config.ui.temporalUiUrl ?? (config.server.enabled ? `http://${config.server.ip}:${config.server.uiPort}` : undefined);
}
