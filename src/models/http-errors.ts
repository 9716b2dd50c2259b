/**
 * Maps HTTP and transport failures of model providers to keel statuses. Providers run
 * with their own retries off: Temporal and the Retry middleware own retrying.
 */
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
