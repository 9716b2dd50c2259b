/**
 * `keel history export`: a run's Temporal history as JSON, in the form `temporal workflow
 * show --output json` prints and `replayHistories` (and the SDK's replayer) read, so a project
 * can keep its own recorded runs and replay them in CI. Node side.
 */
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { KeelClient } from './keel-client';

/** The file name `keel history export` suggests for a run: `<runId>.json`, the id URI-encoded (`replayHistories` reads it back). */
export function historyFileName(runId: string): string {
  return `${encodeURIComponent(runId)}.json`;
}

/** The run's history (its latest execution's, when it continued as new) as JSON text. */
export async function exportHistory(client: KeelClient, runId: string): Promise<string> {
  const history = await client.temporal.workflow.getHandle(runId).fetchHistory();
  return `${historyToJSON(history)}\n`;
}
