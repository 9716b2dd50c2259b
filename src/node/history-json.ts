/**
 * A run's history to and from JSON (the form `temporal workflow show --output json` prints),
 * with the protobufjs that `@temporalio/proto` itself loads. The SDK's own helpers
 * (`historyToJSON`, `historyFromJSON` of `@temporalio/common`) take the JSON codec from
 * whichever protobufjs resolves from `@temporalio/common`, and a fresh `npm install` gives that
 * package a copy of its own (protobufjs 7 hoisted, 8 under each `@temporalio/*`): the codec then
 * refuses the history's types (`type must be a Type`). Asking `@temporalio/proto`'s copy works
 * in any npm layout. Node side.
 */
import { temporal } from '@temporalio/proto';
import { createRequire } from 'node:module';

/** The part of protobufjs's ProtoJSON codec (`protobufjs/ext/protojson`) used here. */
interface ProtoJson {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options: { ignoreUnknownFields: boolean }): unknown;
}

type History = temporal.api.history.v1.IHistory;

let codec: { protoJson: ProtoJson; historyType: unknown } | undefined;

/** The ProtoJSON codec of the protobufjs `@temporalio/proto` loaded, and the History type of its root (the package's CommonJS export). */
function historyCodec(): NonNullable<typeof codec> {
  if (!codec) {
    const load = createRequire(__filename);
    const root = load('@temporalio/proto') as { lookupType(name: string): unknown };
    const protoJson = createRequire(load.resolve('@temporalio/proto'))('protobufjs/ext/protojson') as ProtoJson;
    codec = { protoJson, historyType: root.lookupType('temporal.api.history.v1.History') };
  }
  return codec;
}

/** A history (as `fetchHistory` gives it) as JSON text, two-space indented. */
export function historyToJSON(history: History): string {
  const { protoJson, historyType } = historyCodec();
  return JSON.stringify(protoJson.toJson(historyType, temporal.api.history.v1.History.fromObject(history)), null, 2);
}

/** Enum values as older tools wrote them (`WorkflowExecutionStarted`) in the form ProtoJSON reads (`EVENT_TYPE_WORKFLOW_EXECUTION_STARTED`). */
function constantCase(value: unknown, prefix: string): unknown {
  if (typeof value !== 'string' || value.startsWith(prefix)) return value;
  return `${prefix}_${value.replace(/(?<=.)([A-Z])/g, '_$1').toUpperCase()}`;
}

/** One event with its enum values in ProtoJSON's form (as the SDK's `historyFromJSON` reads them). */
function normalizedEvent(event: Record<string, unknown>): Record<string, unknown> {
  const key = Object.keys(event).find((name) => name.endsWith('EventAttributes'));
  if (!key) throw new TypeError(`a history event has no attributes: ${JSON.stringify(event).slice(0, 200)}`);
  const attributes = event[key] as Record<string, unknown>;
  const fixed: Record<string, unknown> = { ...attributes };
  const enums: Array<[string, string]> = [
    ['parentClosePolicy', 'PARENT_CLOSE_POLICY'],
    ['workflowIdReusePolicy', 'WORKFLOW_ID_REUSE_POLICY'],
    ['initiator', 'CONTINUE_AS_NEW_INITIATOR'],
    ['retryState', 'RETRY_STATE'],
  ];
  for (const [field, prefix] of enums) if (field in attributes) fixed[field] = constantCase(attributes[field], prefix);
  const taskQueue = attributes.taskQueue as Record<string, unknown> | undefined;
  if (taskQueue && 'kind' in taskQueue) fixed.taskQueue = { ...taskQueue, kind: constantCase(taskQueue.kind, 'TASK_QUEUE_KIND') };
  const childFailure = attributes.childWorkflowExecutionFailureInfo as Record<string, unknown> | undefined;
  if (childFailure && 'retryState' in childFailure)
    fixed.childWorkflowExecutionFailureInfo = { ...childFailure, retryState: constantCase(childFailure.retryState, 'RETRY_STATE') };
  return { ...event, ...('eventType' in event ? { eventType: constantCase(event.eventType, 'EVENT_TYPE') } : {}), [key]: fixed };
}

/** A history from its JSON (parsed): throws a TypeError naming what is wrong when it is not one. */
export function historyFromJSON(json: unknown): History {
  const events = (json as { events?: unknown } | null)?.events;
  if (typeof json !== 'object' || json === null || !Array.isArray(events)) throw new TypeError('expected an object with an array of events');
  const { protoJson, historyType } = historyCodec();
  // Fields a newer server or SDK added are skipped, as the SDK's reader skips them.
  const history = protoJson.fromJson(
    historyType,
    { ...json, events: events.map((event) => normalizedEvent(event as Record<string, unknown>)) },
    { ignoreUnknownFields: true },
  );
  if (history === null) throw new TypeError('not a History');
  return history as History;
}
