/**
 * `keel history export`: a run's Temporal history as JSON, in the form `temporal workflow
 * show --output json` prints and `replayHistories` (and the SDK's replayer) read, so a project
 * can keep its own recorded runs and replay them in CI. Node side.
 */
import { historyToJSON } from '../node/history-json';
import type { KeelClient } from '../client/keel-client';

/** The file name `keel history export` suggests for a run: `<runId>.json`, the id URI-encoded (`replayHistories` reads it back). */
export function historyFileName(runId: string): string {
  return `${encodeURIComponent(runId)}.json`;
}

/** A run's exported history: the JSON text, and the execution it continued from, if it did. */
export interface ExportedHistory {
  text: string;
  /**
   * Set when the run continued as new: the Temporal run id of the execution before the one
   * exported (each execution's history replays on its own).
   */
  continuedFrom?: string;
}

/** The run's history (its latest execution's, when it continued as new) as JSON text. */
export async function exportHistory(client: KeelClient, runId: string): Promise<ExportedHistory> {
  const history = await client.temporal.workflow.getHandle(runId).fetchHistory();
  const continuedFrom = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
  return { text: `${historyToJSON(history)}\n`, ...(continuedFrom ? { continuedFrom } : {}) };
}

/** What `keel history export` says of a run that continued as new. */
export function continuedNote(exported: ExportedHistory): string {
  return exported.continuedFrom
    ? ` (its latest execution: the run continued as new, this execution from ${exported.continuedFrom}; each execution replays on its own)`
    : '';
}
