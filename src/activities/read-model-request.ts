/**
 * Reads a model request back from its run through the `modelRequest` query (the request
 * travels by reference, so history records each message once). Answering needs the Temporal service and a workflow
 * worker; when either cannot answer in time (connection refused, deadline exceeded, no
 * workflow worker polling), the read throws an InfrastructureError, which the activity's
 * retry policy retries. A definite answer that is a refusal (the run is gone, the query
 * failed in the workflow) is an application outcome and stays non-retryable. Node side.
 */
import { Context, log, type Info } from '@temporalio/activity';
import { ServiceError, isGrpcServiceError, type Client } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import { KeelError } from '../core/errors';
import type { ModelRequest } from '../core/messages';
import type { CallModelInput } from '../core/run';
import { modelRequestQuery, type ModelRequestPage } from '../core/protocol';
import { InfrastructureError } from './infrastructure-error';

/** How long one read waits for an answer by default (the server's own limit is 30 s). */
export const DEFAULT_MODEL_REQUEST_TIMEOUT: Duration = '10 seconds';

/** How many pages of a large request are read at once. */
const PARALLEL_PAGES = 4;

/**
 * Pages of model requests this worker has read, by page id (least recently used first). A
 * turn's request repeats every page of the previous one but the last, so a worker reads
 * only what is new.
 */
class PageCache {
  private pages = new Map<string, string>();
  private chars = 0;
  constructor(private readonly maxChars: number) {}
  get(id: string): string | undefined {
    const text = this.pages.get(id);
    if (text !== undefined) {
      this.pages.delete(id);
      this.pages.set(id, text);
    }
    return text;
  }
  set(id: string, text: string): void {
    if (this.pages.has(id)) return;
    this.pages.set(id, text);
    this.chars += text.length;
    for (const [oldest, old] of this.pages) {
      if (this.chars <= this.maxChars) break;
      this.pages.delete(oldest);
      this.chars -= old.length;
    }
  }
}
const pageCache = new PageCache(64 * 1024 * 1024);

/** Options of `readModelRequest`. */
export interface ReadModelRequestOptions {
  client: Client;
  input: Pick<CallModelInput, 'model' | 'requestKey' | 'runId' | 'temporalRunId'>;
  /** How long the query may wait for an answer before the read fails (retryably). */
  timeout?: Duration;
}

/** Longest pause between reads of a request whose run cannot answer. */
const MAX_PAUSE_MS = 10_000;

/**
 * The request the run holds under `input.requestKey`; must run inside an activity. While the
 * run cannot answer (its workflow worker busy, hung or restarting, Temporal out of reach), the
 * read is tried again, heartbeating, for as long as this attempt's own timeouts allow (a
 * margin kept for the model call); then it fails retryably, for the activity's retry policy.
 */
export async function readModelRequest({ client, input, timeout = DEFAULT_MODEL_REQUEST_TIMEOUT }: ReadModelRequestOptions): Promise<ModelRequest> {
  const context = Context.current();
  const deadline = attemptDeadline(context.info);
  let pause = 500;
  for (let tries = 1; ; tries++) {
    try {
      return await readOnce({ client, input, timeout });
    } catch (error) {
      if (!InfrastructureError.isInstance(error) || Date.now() + pause >= deadline) throw error;
      if (tries === 1)
        log.warn('the run cannot hand its model request over now; trying again while the model call has time', {
          runId: input.runId,
          model: input.model,
          reason: error.message,
        });
      context.heartbeat();
      await context.sleep(pause);
      pause = Math.min(MAX_PAUSE_MS, pause * 2);
    }
  }
}

/**
 * When this attempt must stop reading: its start-to-close (and any schedule-to-close) deadline,
 * less a margin for the model call itself (a tenth of the attempt, at most 30 s).
 */
function attemptDeadline(info: Info): number {
  const attempt = info.startToCloseTimeoutMs;
  const margin = Math.min(30_000, attempt / 10);
  const started = Date.now();
  const ends = [started + attempt - margin];
  if (info.scheduleToCloseTimeoutMs) ends.push(info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs - margin);
  return Math.min(...ends);
}

/** One read of the request: an InfrastructureError when the run could not answer in time. */
async function readOnce({ client, input, timeout = DEFAULT_MODEL_REQUEST_TIMEOUT }: ReadModelRequestOptions): Promise<ModelRequest> {
  const { model, requestKey, runId, temporalRunId } = input;
  const handle = client.workflow.getHandle(runId, temporalRunId);
  try {
    // Page by page (each answer far under the payload limit), each page within the timeout;
    // the activity's cancellation aborts the whole read (one listener, however many pages).
    const page = (index: number) => client.withDeadline(Date.now() + msToNumber(timeout), () => handle.query(modelRequestQuery, requestKey, index));
    return await client.withAbortSignal(Context.current().cancellationSignal, () => readPages(page));
  } catch (error) {
    // ServiceError wraps a failed gRPC call ("Failed to query Workflow"); its cause says why.
    const cause = error instanceof ServiceError ? error.cause : undefined;
    const reason = `${error instanceof Error ? error.message : String(error)}${cause ? `: ${cause.message}` : ''}`;
    const message = `could not read the request of model "${model}" from run ${runId}: ${reason}`;
    if (error instanceof ServiceError || isGrpcServiceError(error)) throw new InfrastructureError(message, { modelName: model });
    throw new KeelError('INTERNAL', message, { modelName: model });
  }
}

/** A request's pages: the first (with every page's id), then those this worker has not cached, a few at a time. */
async function readPages(page: (index: number) => Promise<ModelRequestPage>): Promise<ModelRequest> {
  const first = await page(0);
  const ids = first.ids ?? [];
  const texts: Array<string | undefined> = Array.from({ length: first.pages }, (_, index) =>
    index === 0 ? first.text : ids[index] !== undefined ? pageCache.get(ids[index]) : undefined,
  );
  if (ids[0] !== undefined) pageCache.set(ids[0], first.text);
  const missing = texts.flatMap((text, index) => (text === undefined ? [index] : []));
  for (let start = 0; start < missing.length; start += PARALLEL_PAGES) {
    const batch = missing.slice(start, start + PARALLEL_PAGES);
    const answers = await Promise.all(batch.map((index) => page(index)));
    batch.forEach((index, position) => {
      texts[index] = answers[position]!.text;
      if (ids[index] !== undefined) pageCache.set(ids[index], answers[position]!.text);
    });
  }
  return JSON.parse(texts.join('')) as ModelRequest;
}
