/**
 * The payload converter of keel's workflow bundle: the SDK's default converter, except that a
 * payload it cannot decode becomes an `UndecodablePayload` marker instead of an exception. The
 * SDK decodes a signal's arguments before any handler or interceptor runs, and a decoding error
 * there fails the workflow task, again on every retry: one `resume` signal with an unknown
 * encoding would leave the run unable to answer a query, take a decision or finish. With the
 * marker, the handler refuses the signal (log and status) and the run goes on; an update's
 * validator refuses it the same way. A sealed payload the worker's codec could not open (a key
 * id the worker lacks, ciphertext that does not verify) arrives as `UNOPENED_ENCODING` and
 * becomes the same marker when it is the run's own (so a forged `resume` is refused, not fatal);
 * `requireOpened` makes the run's input wait for a worker with the key. Encoding is the default
 * converter's, unchanged.
 * Runs in the workflow sandbox (bundled as `payloadConverterPath`): pure.
 */
import { defaultPayloadConverter, type Payload, type PayloadConverter, type SerializationContext } from '@temporalio/common';
import { decode } from '@temporalio/common/lib/encoding';
import { inWorkflowContext, workflowInfo } from '@temporalio/workflow';
import { UNOPENED_ENCODING, undecodable } from '../core/undecodable';

/** The encoding a payload's metadata names, as text ('(none)' when absent). */
function encodingOf(payload: Payload): string {
  const encoding = payload.metadata?.encoding;
  if (!encoding) return '(none)';
  let text = '';
  for (const byte of encoding) text += byte < 0x20 || byte > 0x7e ? '?' : String.fromCharCode(byte);
  return text;
}

/** True when `context` is this workflow's own (its input, signals, updates, queries), not a child's or an activity's. */
function ownPayload(context: SerializationContext | undefined): boolean {
  if (context?.type !== 'workflow') return false;
  if (!inWorkflowContext()) return false;
  const info = workflowInfo();
  return context.workflowId === info.workflowId && context.namespace === info.namespace;
}

/** The default converter, tolerant of payloads it cannot decode. */
export class TolerantPayloadConverter implements PayloadConverter {
  toPayload<T>(value: T, ...rest: unknown[]): Payload {
    return (defaultPayloadConverter.toPayload as (value: T, ...rest: unknown[]) => Payload)(value, ...rest);
  }

  fromPayload<T>(payload: Payload, context?: SerializationContext, ...rest: unknown[]): T {
    const encoding = encodingOf(payload);
    if (encoding === UNOPENED_ENCODING) {
      const reason = decode(payload.data ?? new Uint8Array());
      // What this run was sent (its input, a signal, an update) becomes the marker; what another
      // execution or an activity produced (the worker's codec only marks the workflow's own
      // payloads, so this is a child's result) fails the task and waits for a worker with the key.
      if (!ownPayload(context)) throw new Error(reason);
      return undecodable('binary/encrypted', reason, true) as T;
    }
    try {
      return (defaultPayloadConverter.fromPayload as (payload: Payload, ...rest: unknown[]) => T)(payload, context, ...rest);
    } catch (error) {
      return undecodable(encoding, error instanceof Error ? error.message : String(error)) as T;
    }
  }
}

/** What the SDK loads from `payloadConverterPath`. */
export const payloadConverter = new TolerantPayloadConverter();
