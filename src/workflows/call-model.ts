/**
 * A model call by reference: the request's JSON is kept in the run's state and the
 * `callModel` activity reads it back through the `modelRequest` query, page by page, so
 * history records each message once and no request is too large for a payload. Runs in the workflow: deterministic, no I/O.
 */
import { workflowInfo } from '@temporalio/workflow';
import { KeelError } from '../core/errors';
import { type Message, type ModelRequest, type ModelResponse } from '../core/messages';
import { addUsage } from '../core/usage';
import type { AgentSpec } from '../core/run';
import { MODEL_REQUEST_PAGE_CHARS } from '../core/protocol';
import { callModelDoor, proxyDoor } from '../engine/activities';
import { activityOptions, asKeelError, localActivityOptions, untilRegistered } from '../engine/activity-errors';
import type { RunState } from './run-state';

/**
 * The largest request a run hands to its model activity. The activity reads it in pages,
 * so this is not a payload limit but a sanity bound: no model takes a context this size.
 */
const MAX_MODEL_REQUEST_BYTES = 64 * 1024 * 1024;

/** Byte length of a string in UTF-8 (no Buffer or TextEncoder needed in the sandbox). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      index++;
    } else bytes += 3;
  }
  return bytes;
}

/** Requests up to this many characters of JSON travel inline, in the model activity's input. */
export const INLINE_REQUEST_CHARS = 8 * 1024;

/**
 * The JSON text of a request (the same value JSON.stringify gives), each message's JSON cached
 * in `messageJson` (the run's, made by `modelCaller`): a turn stringifies only what is new.
 */
export function requestJson(request: ModelRequest, messageJson: WeakMap<Message, string>): string {
  const { messages, ...rest } = request;
  const parts = messages.map((message) => {
    let json = messageJson.get(message);
    if (json === undefined) {
      json = JSON.stringify(message);
      messageJson.set(message, json);
    }
    return json;
  });
  const restJson = JSON.stringify(rest);
  return `{"messages":[${parts.join(',')}]${restJson === '{}' ? '' : `,${restJson.slice(1, -1)}`}}`;
}

/**
 * Ids of a request's pages, for the activity's page cache: a page equal to the same page of
 * the previous request to that model keeps its id, any other gets a new one (unique in the
 * chain of runs: `<first run id>/<request key>/<page>`). A conversation only grows at the
 * end, so a turn's request shares all but its last pages with the one before.
 */
function pageIds(previous: { text: string; ids: string[] } | undefined, text: string, prefix: string): string[] {
  const pages = Math.max(1, Math.ceil(text.length / MODEL_REQUEST_PAGE_CHARS));
  return Array.from({ length: pages }, (_, page) => {
    const from = page * MODEL_REQUEST_PAGE_CHARS;
    const same =
      previous &&
      page < previous.ids.length &&
      text.slice(from, from + MODEL_REQUEST_PAGE_CHARS) === previous.text.slice(from, from + MODEL_REQUEST_PAGE_CHARS);
    return same ? previous.ids[page]! : `${prefix}/${page}`;
  });
}

/** Options of `modelCaller`. */
export interface ModelCallerOptions {
  /** The model activity's options, which models are called as local activities, the task queue of each rate-limited one. */
  agent: Pick<AgentSpec, 'activities' | 'localModels' | 'modelQueues'>;
  /** Counts each call's usage (into the run's tree). */
  onUsage?: (usage: ModelResponse['usage']) => void;
}

/** Calls models through the model activity, adding their usage to the run's. */
export function modelCaller(run: RunState, { agent, onUsage }: ModelCallerOptions): (model: string, request: ModelRequest) => Promise<ModelResponse> {
  const { localModels = [], modelQueues = {} } = agent;
  const options = activityOptions(agent.activities.model);
  const localOptions = localActivityOptions(agent.activities.model);
  /** The latest request to each model, with its page ids. */
  const latest = new Map<string, { text: string; ids: string[] }>();
  const messageJson = new WeakMap<Message, string>();
  const { firstExecutionRunId: chain, runId: temporalRunId } = workflowInfo();
  return async (model, request) => {
    const callIndex = run.modelCalls[model] ?? 0;
    run.modelCalls[model] = callIndex + 1;
    const requestKey = `${model}#${callIndex}`;
    const text = requestJson(request, messageJson);
    // Cheap bound first: a string's UTF-8 length is at most 3 bytes per UTF-16 unit.
    const requestBytes = text.length * 3 > MAX_MODEL_REQUEST_BYTES ? utf8Length(text) : text.length;
    if (requestBytes > MAX_MODEL_REQUEST_BYTES) {
      throw new KeelError(
        'OUT_OF_RANGE',
        `the request to model "${model}" is ${(requestBytes / 1024 / 1024).toFixed(2)} MiB, over the ${(MAX_MODEL_REQUEST_BYTES / 1024 / 1024).toFixed(0)} MiB a run hands to its model activity; shorten the conversation (ContextCompression) or the tool outputs`,
        { modelName: model, sizeBytes: requestBytes },
      );
    }
    // A local call's input never reaches history: the request always rides in it. Otherwise a small
    // request rides in the activity's input (history holds at most INLINE_REQUEST_CHARS more per
    // call, and no read back is needed); a larger one is read from the run by reference.
    const local = localModels.includes(model);
    const inline = local || text.length <= INLINE_REQUEST_CHARS;
    if (!inline) {
      const ids = pageIds(latest.get(model), text, `${chain}/${requestKey}`);
      latest.set(model, { text, ids });
      run.modelRequests[requestKey] = { text, ids };
    }
    let response: ModelResponse;
    try {
      // A rate-limited model's calls go to its own task queue, where Temporal applies the limit.
      // A local call runs in this worker, so no queue (and no rate limit across workers) applies to it.
      const queue = !local && modelQueues[model] !== undefined ? { taskQueue: modelQueues[model] } : {};
      const callModel = proxyDoor(
        callModelDoor,
        local ? { local, ...localOptions, summary: `model ${model}` } : { ...options, ...queue, summary: `model ${model}` },
      );
      response = await untilRegistered((refusedBefore) =>
        callModel({
          model,
          callIndex,
          requestKey,
          runId: run.runId,
          temporalRunId,
          agent: run.status.agent,
          turn: run.status.turn,
          ...(inline ? { requestText: text } : {}),
          ...(refusedBefore ? { refusedBefore } : {}),
        }),
      );
    } catch (error) {
      throw asKeelError(error, `model "${model}"`);
    } finally {
      delete run.modelRequests[requestKey];
    }
    // Counted past the call: a sum keel cannot represent fails the run, never the model call that Retry or Fallback would try again.
    const usage = addUsage(run.status.usage, response.usage, `the usage model "${model}" reported`);
    onUsage?.(response.usage);
    run.status.usage = usage;
    return response;
  };
}
