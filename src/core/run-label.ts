/**
 * A short name for a run, where a person reads many (the inbox, `keel holds`, the runs list):
 * full run ids carry a UUID and repeat their parent's id. Imports nothing, so keel ui's page
 * names runs as the CLI and the server do. Pure.
 */

const UUID = /([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * A short name for run `runId`: with `parentId` (a run above it) and an id that extends it, the
 * rest of the id (`clerk-1` for `<parentId>/clerk-1`); otherwise the id with each UUID cut to its
 * first 8 digits (`run-5a090c1c`; `session/chat/s1/run-2` stays as it is).
 */
export function runLabel(runId: string, parentId?: string): string {
  if (parentId !== undefined && runId.startsWith(`${parentId}/`)) return runId.slice(parentId.length + 1);
  return runId.replace(UUID, '$1');
}
