/**
 * One payload read the way the SDK reads results: from External Storage when history holds a
 * reference, through the client's codecs (payload encryption), then its payload converter. For the payloads keel reads straight from
 * Temporal's API (history events, heartbeat details, failure details), which the SDK does not
 * decode on its own. Node side.
 */
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { ExternalStorageRunner } from '@temporalio/common/lib/internal-non-workflow/external-storage-runner';

/** The value of `payload`, or undefined when there is none or this client cannot read it (another converter, a missing key). */
export async function decodePayload<T>(client: Client, payload: Payload | null | undefined): Promise<T | undefined> {
  if (!payload) return undefined;
  try {
    const converter = client.options.loadedDataConverter;
    // A payload External Storage holds is a reference in history: fetched first (it was stored after the codec ran).
    const [stored] = converter.externalStorage ? await new ExternalStorageRunner(converter.externalStorage).retrieve([payload]) : [payload];
    return await decodeFromPayloadsAtIndex<T>(converter, 0, [stored!]);
  } catch {
    return undefined;
  }
}
