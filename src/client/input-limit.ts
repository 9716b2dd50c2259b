/** The client-side check of an input's size. Node side. */
import type { Client } from '@temporalio/client';
import { MAX_PAYLOAD_BYTES, MAX_STORED_PAYLOAD_BYTES, assertPayloadFits } from '../activities/payload-limit';

/**
 * Refuses, before anything is sent, an input the server or the store would refuse: over
 * 2 MiB without External Storage, over the store's bound with it. (Sent, it fails only after
 * the SDK's retries, with the cause hidden.)
 */
export function assertInputFits(client: Client, input: unknown, what: string): void {
  const storage = client.options.loadedDataConverter.externalStorage;
  assertPayloadFits(input, what, storage ? MAX_STORED_PAYLOAD_BYTES : MAX_PAYLOAD_BYTES);
}
