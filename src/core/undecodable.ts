/**
 * A payload the workflow's data converter could not decode (an encoding it does not know, as
 * another SDK's codec or a typo in `--input-meta` produces, bytes that are not the JSON they
 * claim to be, or a payload sealed with a key the worker lacks or that does not verify). keel's
 * payload converter hands such a payload to the workflow as this marker instead of throwing, so a
 * signal carrying one is refused by its handler (logged and shown in status) rather than failing
 * every workflow task of the run from then on. A sealed payload keel's own workflow needs (its
 * input, a continued run's conversation) is different: `requireOpened` fails the workflow task
 * on it, so the run waits for a worker that has the key. Pure: safe in workflow code.
 */

const MARK = '__keelUndecodablePayload';

/**
 * The encoding of what a worker's codec returns for a sealed payload it cannot open, carrying
 * the reason (UTF-8) as its data: the payload converter turns it into the marker.
 */
export const UNOPENED_ENCODING = 'binary/keel-unopened';

/** What stands in for a payload that could not be decoded. */
export interface UndecodablePayload {
  readonly [MARK]: { encoding: string; reason: string; sealed?: true };
}

/** The marker for a payload of `encoding` that failed to decode with `reason`; `sealed`: its encryption could not be opened. */
export function undecodable(encoding: string, reason: string, sealed = false): UndecodablePayload {
  return { [MARK]: { encoding, reason, ...(sealed ? { sealed: true as const } : {}) } };
}

/** True for the marker of an undecodable payload. */
export function isUndecodable(value: unknown): value is UndecodablePayload {
  return typeof value === 'object' && value !== null && typeof (value as Record<string, unknown>)[MARK] === 'object';
}

/** Says what was wrong with an undecodable payload, e.g. `its encoding "binary/x-bogus" is not one keel's data converter knows`. */
export function describeUndecodable(value: UndecodablePayload): string {
  const { encoding, reason } = value[MARK];
  return `the payload could not be decoded (encoding "${encoding}": ${reason})`;
}

/**
 * Throws a plain Error (which fails the workflow task, so Temporal retries it, on this worker or
 * another) when `value` is a sealed payload this worker could not open: a key missing from a
 * deploy stalls the run until a worker with the key takes it, instead of failing it.
 */
export function requireOpened(value: unknown, what: string): void {
  if (isUndecodable(value) && value[MARK].sealed) throw new Error(`${what} cannot be read here: ${value[MARK].reason}`);
}
