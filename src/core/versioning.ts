/**
 * Worker Versioning as a run carries it (docs/deploys.md, "Safe deploys"): the memo key a run's start
 * sets to choose how the run moves between builds, read by the workflow when it starts and
 * handed down to the runs it starts. Pure.
 */

/** The memo key naming a run's versioning behavior (`pinned` or `autoUpgrade`); absent: the worker's `deployment.defaultBehavior`. */
export const VERSIONING_MEMO_KEY = 'keelVersioning';

/** How a run moves between builds: kept on the build that started it, or moved to the current build at its next step. */
export type RunVersioning = 'pinned' | 'autoUpgrade';

/** The behavior a memo names, if it names a valid one. */
export function versioningOfMemo(memo: Record<string, unknown> | undefined): RunVersioning | undefined {
  const chosen = memo?.[VERSIONING_MEMO_KEY];
  return chosen === 'pinned' || chosen === 'autoUpgrade' ? chosen : undefined;
}

/** The memo entry that gives a run `versioning` (none when it takes the worker's default). */
export function versioningMemo(versioning: RunVersioning | undefined): Record<string, RunVersioning> {
  return versioning ? { [VERSIONING_MEMO_KEY]: versioning } : {};
}
