/**
 * One payload read the way the SDK reads results: through the client's codecs (payload
 * encryption) and then its payload converter. For the payloads keel reads straight from
 * Temporal's API (history events, heartbeat details, failure details), which the SDK does not
 * decode on its own. Node side.
 */
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';

/** The value of `payload`, or undefined when there is none or this client cannot read it (another converter, a missing key). */
export async function decodePayload<T>(client: Client, payload: Payload | null | undefined): Promise<T | undefined> {
  if (!payload) return undefined;
  try {
    return await decodeFromPayloadsAtIndex<T>(client.options.loadedDataConverter, 0, [payload]);
  } catch {
    return undefined;
  }
}
