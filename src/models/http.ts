/**
 * The HTTP side of model providers: one POST with a timeout, HTTP and transport failures
 * mapped to keel statuses, the response read through a schema. No retries here: Temporal
 * and the Retry middleware own retrying.
 */
import type { z } from 'zod';
import { KeelError } from '../core/errors';
import { statusFromHttp } from '../core/status';

/** Parses a Retry-After header (seconds or an HTTP date) into milliseconds. */
export function parseRetryAfter(header: string | null, now: number = Date.now()): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(header);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** A KeelError for a non-2xx response; the body's error message is kept when present. */
export async function httpError(provider: string, model: string, response: Response): Promise<KeelError> {
  let detail = '';
  try {
    const body = await response.text();
    try {
      const parsed = JSON.parse(body) as { error?: { message?: string } | string; message?: string };
      detail = typeof parsed.error === 'string' ? parsed.error : (parsed.error?.message ?? parsed.message ?? body);
    } catch {
      detail = body;
    }
  } catch {
    detail = '';
  }
  const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
  const status = statusFromHttp(response.status);
  const message = `${provider} model "${model}" answered HTTP ${response.status}${detail ? `: ${detail.slice(0, 500)}` : ''}`;
  return new KeelError(status, message, { modelName: model, httpStatus: response.status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
}

/** A KeelError for a request that never got a response (refused, reset, timed out). */
export function transportError(provider: string, model: string, error: unknown, signal: AbortSignal): KeelError {
  if (signal.aborted) return new KeelError('CANCELLED', `${provider} model "${model}": request cancelled`, { modelName: model });
  const cause = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
  return new KeelError('UNAVAILABLE', `${provider} model "${model}" could not be reached: ${cause}`, { modelName: model });
}

/** Options of `postJson`. */
export interface PostJsonOptions<Schema extends z.ZodType> {
  /** Provider name for messages ("anthropic", "openai-compatible"). */
  provider: string;
  /** Registered model name for messages. */
  model: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  timeoutMs: number;
  /** The activity's cancellation. */
  signal: AbortSignal;
  /** The shape of a successful response. */
  schema: Schema;
  /** Replaces the error for a status the provider gives its own meaning (e.g. Anthropic's 529). */
  adjustError?: (httpStatus: number, error: KeelError) => KeelError;
}

/** POSTs JSON and returns the parsed response, or throws a KeelError with a status. */
export async function postJson<Schema extends z.ZodType>({ provider, model, url, headers, body, timeoutMs, signal, schema, adjustError }: PostJsonOptions<Schema>): Promise<z.output<Schema>> {
  const deadline = AbortSignal.timeout(timeoutMs);
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.any([signal, deadline]),
    });
  } catch (error) {
    if (!signal.aborted && deadline.aborted) throw new KeelError('DEADLINE_EXCEEDED', `${provider} model "${model}" did not answer within ${timeoutMs} ms`, { modelName: model });
    throw transportError(provider, model, error, signal);
  }
  if (!response.ok) {
    const error = await httpError(provider, model, response);
    throw adjustError ? adjustError(response.status, error) : error;
  }
  const parsed = schema.safeParse(await response.json().catch(() => undefined));
  if (!parsed.success) {
    throw new KeelError('INTERNAL', `${provider} model "${model}" sent a response keel cannot read: ${parsed.error.issues[0]?.message ?? 'bad shape'}`, { modelName: model });
  }
  return parsed.data;
}
