/**
 * The payload converter of keel's workflow bundle: the SDK's default converter, except that a
 * payload it cannot decode becomes an `UndecodablePayload` marker instead of an exception. The
 * SDK decodes a signal's arguments before any handler or interceptor runs, and a decoding error
 * there fails the workflow task, again on every retry: one `resume` signal with an unknown
 * encoding would leave the run unable to answer a query, take a decision or finish. With the
 * marker, the handler refuses the signal (log and status) and the run goes on; an update's
 * validator refuses it the same way. Encoding is the default converter's, unchanged.
 * Runs in the workflow sandbox (bundled as `payloadConverterPath`): pure.
 */
import { defaultPayloadConverter, type Payload, type PayloadConverter } from '@temporalio/common';
import { undecodable } from '../core/undecodable';

/** The encoding a payload's metadata names, as text ('(none)' when absent). */
function encodingOf(payload: Payload): string {
  const encoding = payload.metadata?.encoding;
  if (!encoding) return '(none)';
  let text = '';
  for (const byte of encoding) text += byte < 0x20 || byte > 0x7e ? '?' : String.fromCharCode(byte);
  return text;
}

/** The default converter, tolerant of payloads it cannot decode. */
export class TolerantPayloadConverter implements PayloadConverter {
  toPayload<T>(value: T, ...rest: unknown[]): Payload {
    return (defaultPayloadConverter.toPayload as (value: T, ...rest: unknown[]) => Payload)(value, ...rest);
  }

  fromPayload<T>(payload: Payload, ...rest: unknown[]): T {
    try {
      return (defaultPayloadConverter.fromPayload as (payload: Payload, ...rest: unknown[]) => T)(payload, ...rest);
    } catch (error) {
      return undecodable(encodingOf(payload), error instanceof Error ? error.message : String(error)) as T;
    }
  }
}

/** What the SDK loads from `payloadConverterPath`. */
export const payloadConverter = new TolerantPayloadConverter();
