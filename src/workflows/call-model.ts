/**
 * A model call by reference: the request is kept in the run's state and the `callModel`
 * activity reads it back through the `modelRequest` query, so history records each message
 * once (DESIGN §6). A request too large for that query fails the run at once, naming the
 * model. Runs in the workflow: deterministic, no I/O.
 */
import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import { KeelError } from '../core/errors';
import { addUsage, type ModelRequest, type ModelResponse } from '../core/messages';
import type { KeelActivities } from '../activities/types';
import { asKeelError } from './activity-errors';
import type { RunState } from './run-state';

/**
 * The model activity reads its request through a query, whose answer must fit one gRPC
 * message (4 MiB); keep headroom for the envelope.
 */
const MAX_MODEL_REQUEST_BYTES = 3.5 * 1024 * 1024;

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

/** Calls models through the model activity, adding their usage to the run's. */
export function modelCaller(run: RunState, options: ActivityOptions, temporalRunId: string): (model: string, request: ModelRequest) => Promise<ModelResponse> {
  return async (model, request) => {
    const callIndex = run.modelCalls[model] ?? 0;
    run.modelCalls[model] = callIndex + 1;
    const requestKey = `${model}#${callIndex}`;
    const requestBytes = utf8Length(JSON.stringify(request));
    if (requestBytes > MAX_MODEL_REQUEST_BYTES) {
      throw new KeelError(
        'OUT_OF_RANGE',
        `the request to model "${model}" is ${(requestBytes / 1024 / 1024).toFixed(2)} MiB, over the ${(MAX_MODEL_REQUEST_BYTES / 1024 / 1024).toFixed(1)} MiB a run can hand to its model activity; shorten the conversation (ContextCompression) or the tool outputs`,
        { modelName: model, sizeBytes: requestBytes },
      );
    }
    run.modelRequests[requestKey] = request;
    try {
      const response = await proxyActivities<KeelActivities>({ ...options, summary: `model ${model}` }).callModel({
        model,
        callIndex,
        requestKey,
        runId: run.runId,
        temporalRunId,
      });
      run.status.usage = addUsage(run.status.usage, response.usage);
      return response;
    } catch (error) {
      throw asKeelError(error, `model "${model}"`);
    } finally {
      delete run.modelRequests[requestKey];
    }
  };
}
