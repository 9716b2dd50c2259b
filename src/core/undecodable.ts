/**
 * A payload the workflow's data converter could not decode (an encoding it does not know, as
 * another SDK's codec or a typo in `--input-meta` produces, or bytes that are not the JSON they
 * claim to be). keel's payload converter hands such a payload to the workflow as this marker
 * instead of throwing, so a signal carrying one is refused by its handler (logged and shown in
 * status) rather than failing every workflow task of the run from then on. Pure: safe in
 * workflow code.
 */

const MARK = '__keelUndecodablePayload';

/** What stands in for a payload that could not be decoded. */
export interface UndecodablePayload {
  readonly [MARK]: { encoding: string; reason: string };
}

/** The marker for a payload of `encoding` that failed to decode with `reason`. */
export function undecodable(encoding: string, reason: string): UndecodablePayload {
  return { [MARK]: { encoding, reason } };
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
