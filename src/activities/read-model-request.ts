/**
 * Reads a model request back from its run through the `modelRequest` query (the request
 * travels by reference, DESIGN §6). Answering needs the Temporal service and a workflow
 * worker; when either cannot answer in time (connection refused, deadline exceeded, no
 * workflow worker polling), the read throws an InfrastructureError, which the activity's
 * retry policy retries. A definite answer that is a refusal (the run is gone, the query
 * failed in the workflow) is an application outcome and stays non-retryable. Node side.
 */
import { Context } from '@temporalio/activity';
import { ServiceError, isGrpcServiceError, type Client } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import { KeelError } from '../core/errors';
import type { ModelRequest } from '../core/messages';
import type { CallModelInput } from '../core/run';
import { modelRequestQuery } from '../workflows/definitions';
import { InfrastructureError } from './infrastructure-error';

/** How long one read waits for an answer by default (the server's own limit is 30 s). */
export const DEFAULT_MODEL_REQUEST_TIMEOUT: Duration = '10 seconds';

/** Options of `readModelRequest`. */
export interface ReadModelRequestOptions {
  client: Client;
  input: Pick<CallModelInput, 'model' | 'requestKey' | 'runId' | 'temporalRunId'>;
  /** How long the query may wait for an answer before the read fails (retryably). */
  timeout?: Duration;
}

/** The request the run holds under `input.requestKey`; must run inside an activity. */
export async function readModelRequest({ client, input, timeout = DEFAULT_MODEL_REQUEST_TIMEOUT }: ReadModelRequestOptions): Promise<ModelRequest> {
  const { model, requestKey, runId, temporalRunId } = input;
  const handle = client.workflow.getHandle(runId, temporalRunId);
  try {
    // Page by page (each answer far under the payload limit), each page within the timeout.
    const page = (index: number) =>
      client.withAbortSignal(Context.current().cancellationSignal, () => client.withDeadline(Date.now() + msToNumber(timeout), () => handle.query(modelRequestQuery, requestKey, index)));
    const first = await page(0);
    const texts = [first.text];
    for (let index = 1; index < first.pages; index++) texts.push((await page(index)).text);
    return JSON.parse(texts.join('')) as ModelRequest;
  } catch (error) {
    // ServiceError wraps a failed gRPC call ("Failed to query Workflow"); its cause says why.
    const cause = error instanceof ServiceError ? error.cause : undefined;
    const reason = `${error instanceof Error ? error.message : String(error)}${cause ? `: ${cause.message}` : ''}`;
    const message = `could not read the request of model "${model}" from run ${runId}: ${reason}`;
    if (error instanceof ServiceError || isGrpcServiceError(error)) throw new InfrastructureError(message, { modelName: model });
    throw new KeelError('INTERNAL', message, { modelName: model });
  }
}
