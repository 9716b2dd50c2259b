/**
 * The HTTP side of model providers: one POST with a timeout, HTTP and transport failures
 * mapped to keel statuses, the response read through a schema. No retries here: Temporal
 * and the Retry middleware own retrying.
 */
import type { z } from 'zod';
import { KeelError } from '../core/errors';
import { statusFromHttp } from '../core/status';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(?<month>${MONTHS.join('|')})`;
const TIME = '(?<hour>\\d{2}):(?<minute>\\d{2}):(?<second>\\d{2})';
/** delay-seconds: 1*DIGIT (no sign, decimal point, exponent or hex). */
const DELAY_SECONDS = /^\d+$/;
/** HTTP-date forms (RFC 9110 §5.6.7); each names day, month, year, hour, minute, second. */
const HTTP_DATES = [
  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
  new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (?<day>\\d{2}) ${MONTH} (?<year>\\d{4}) ${TIME} GMT$`),
  // obsolete RFC 850 date: Sunday, 06-Nov-94 08:49:37 GMT
  new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (?<day>\\d{2})-${MONTH}-(?<year>\\d{2}) ${TIME} GMT$`),
  // obsolete asctime date: Sun Nov  6 08:49:37 1994
  new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} (?<day>[ \\d]\\d) ${TIME} (?<year>\\d{4})$`),
];

/** Epoch milliseconds of an HTTP-date, or undefined when it is not one (or names a day like 31 Feb). */
function parseHttpDate(text: string, now: number): number | undefined {
  const fields = HTTP_DATES.map((pattern) => pattern.exec(text)?.groups).find((groups) => groups !== undefined);
  if (!fields) return undefined;
  const [day, month, hour, minute, second] = [
    Number(fields.day),
    MONTHS.indexOf(fields.month!),
    Number(fields.hour),
    Number(fields.minute),
    Number(fields.second),
  ];
  let year = Number(fields.year);
  if (fields.year!.length === 2) {
    // RFC 850's two-digit year: one more than 50 years ahead is the latest past year with those digits.
    const currentYear = new Date(now).getUTCFullYear();
    year += currentYear - (currentYear % 100);
    if (year > currentYear + 50) year -= 100;
  }
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  // A leap second (:60) counts as :59.
  const date = new Date(Date.UTC(year, month, day, hour, minute, Math.min(second, 59)));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month || date.getUTCDate() !== day) return undefined;
  return date.getTime();
}

/**
 * Parses a Retry-After header (RFC 9110 §10.2.3) into milliseconds: delay-seconds (digits
 * only) or an HTTP-date (a past date gives 0). Anything else gives undefined.
 */
export function parseRetryAfter(header: string | null, now: number = Date.now()): number | undefined {
  const value = header?.trim();
  if (!value) return undefined;
  if (DELAY_SECONDS.test(value)) return Number(value) * 1000;
  const date = parseHttpDate(value, now);
  return date === undefined ? undefined : Math.max(0, date - now);
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

/** Options of `postRequest`. */
export interface PostRequestOptions {
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
  /** Replaces the error for a status the provider gives its own meaning (e.g. Anthropic's 529). */
  adjustError?: (httpStatus: number, error: KeelError) => KeelError;
}

/** POSTs JSON and returns the response once it answered 2xx; otherwise throws a KeelError with a status. The deadline covers reading the body too. */
export async function postRequest({ provider, model, url, headers, body, timeoutMs, signal, adjustError }: PostRequestOptions): Promise<Response> {
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
    if (!signal.aborted && deadline.aborted)
      throw new KeelError('DEADLINE_EXCEEDED', `${provider} model "${model}" did not answer within ${timeoutMs} ms`, { modelName: model });
    throw transportError(provider, model, error, signal);
  }
  if (!response.ok) {
    const error = await httpError(provider, model, response);
    throw adjustError ? adjustError(response.status, error) : error;
  }
  return response;
}

/** A response body checked against `schema`, or a KeelError saying keel cannot read it. */
export async function readJson<Schema extends z.ZodType>(provider: string, model: string, response: Response, schema: Schema): Promise<z.output<Schema>> {
  const parsed = schema.safeParse(await response.json().catch(() => undefined));
  if (!parsed.success) {
    throw new KeelError('INTERNAL', `${provider} model "${model}" sent a response keel cannot read: ${parsed.error.issues[0]?.message ?? 'bad shape'}`, {
      modelName: model,
    });
  }
  return parsed.data;
}

/** `text` parsed as JSON; else an INTERNAL KeelError: `<provider> model "<model>" <refusal>`. */
export function parseModelJson(text: string, { provider, model, refusal }: { provider: string; model: string; refusal: string }): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new KeelError('INTERNAL', `${provider} model "${model}" ${refusal}`, { modelName: model });
  }
}

/** Whether a response is a stream of server-sent events. */
export function isEventStream(response: Response): boolean {
  return (response.headers.get('content-type') ?? '').includes('text/event-stream');
}

/** The events of a server-sent event stream (WHATWG), as they arrive: their `event` name and `data`. */
export async function* serverSentEvents(
  response: Response,
  { provider, model, signal }: { provider: string; model: string; signal: AbortSignal },
): AsyncGenerator<{ event?: string; data: string }> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  let buffer = '';
  let event: string | undefined;
  let data: string[] = [];
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = buffer.search(/\r\n|\n|\r/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (data.length) yield { ...(event ? { event } : {}), data: data.join('\n') };
          event = undefined;
          data = [];
        } else if (!line.startsWith(':')) {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'data') data.push(value);
          else if (field === 'event') event = value;
        }
      }
    }
  } catch (error) {
    // The request's deadline (postRequest's) also covers reading the stream.
    if (!signal.aborted && (error as Error)?.name === 'TimeoutError')
      throw new KeelError('DEADLINE_EXCEEDED', `${provider} model "${model}" did not finish its answer in time`, { modelName: model });
    throw transportError(provider, model, error, signal);
  }
  if (data.length) yield { ...(event ? { event } : {}), data: data.join('\n') };
}
