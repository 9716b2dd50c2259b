/**
 * Any Vercel AI SDK language model as a keel model: `aiSdkModel({ name, model })` takes a
 * `LanguageModel` of any `@ai-sdk/*` provider (specification v2, v3 or v4, i.e. AI SDK 5, 6
 * or 7) and calls its `doStream` (or `doGenerate`) inside the model activity. keel's messages, tools, usage,
 * finish reasons and errors are mapped both ways. `doGenerate` never retries by itself (the
 * AI SDK's retries live in `generateText`, which keel does not use): the activity's retry
 * policy, Retry and Fallback decide. keel has no dependency on the AI SDK: the model object
 * is used by its shape. Node side.
 */
import { KeelError } from '../core/errors';
import {
  toolResponseWire,
  type FinishReason,
  type Media,
  type Message,
  type ModelRequest,
  type ModelResponse,
  type Part,
  type ToolResponse,
} from '../core/messages';
import type { Usage } from '../core/usage';
import { statusFromHttp } from '../core/status';
import { defineModel, type Model } from '../define';
import { parseModelJson, parseRetryAfter } from './http';

/** The part of an AI SDK `LanguageModel` (v2, v3, v4) keel uses. */
export interface AiSdkLanguageModel {
  readonly specificationVersion: string;
  readonly provider: string;
  readonly modelId: string;
  /**
   * Called with `AiSdkCallOptions` (the fields every specification version shares). Typed
   * `never` here so that any version's model, whose own options type is narrower, fits.
   */
  doGenerate(options: never): PromiseLike<AiSdkGenerateResult>;
  /** Streams the answer: `{ stream }` of the specification's stream parts. */
  doStream?(options: never): PromiseLike<{ stream: ReadableStream<object> }>;
}

type StreamPart = { type: string; [field: string]: unknown };
type DoStream = (options: AiSdkCallOptions) => PromiseLike<{ stream: ReadableStream<StreamPart> }>;

type DoGenerate = (options: AiSdkCallOptions) => PromiseLike<AiSdkGenerateResult>;

/** The call options keel sends (the fields every specification version shares). */
export interface AiSdkCallOptions {
  prompt: AiSdkMessage[];
  tools?: Array<{ type: 'function'; name: string; description?: string; inputSchema: Record<string, unknown> }>;
  abortSignal?: AbortSignal;
  providerOptions?: Record<string, Record<string, unknown>>;
  [option: string]: unknown;
}

/**
 * A piece of a tool result's `content` output: text, or media in the shape of the model's
 * specification version (v2: `media` with base64 data; since v3: `image-data`/`file-data`, or
 * `image-url`/`file-url`).
 */
type AiSdkToolResultItem =
  | { type: 'text'; text: string }
  | { type: 'media' | 'image-data' | 'file-data'; data: string; mediaType: string }
  | { type: 'image-url'; url: string }
  | { type: 'file-url'; url: string; mediaType?: string };

type AiSdkToolResultOutput = { type: 'text'; value: string } | { type: 'json'; value: unknown } | { type: 'content'; value: AiSdkToolResultItem[] };

type AiSdkContentPart =
  | { type: 'text'; text: string }
  | { type: 'file'; data: string | URL; mediaType: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-result'; toolCallId: string; toolName: string; output: AiSdkToolResultOutput };

/** A prompt message, as the specification shapes it. */
export type AiSdkMessage = { role: 'system'; content: string } | { role: 'user' | 'assistant' | 'tool'; content: AiSdkContentPart[] };

/** What `doGenerate` answers: content, a finish reason (a string in v2, `{ unified, raw }` since v3) and usage (flat in v2, nested since v3). */
export interface AiSdkGenerateResult {
  content: Array<{ type: string; [field: string]: unknown }>;
  finishReason: string | { unified: string; raw?: string };
  usage: Record<string, unknown>;
}

/** Options of `aiSdkModel`. */
export interface AiSdkModelOptions {
  /** Registered name, e.g. `openai/gpt-4o-mini`. */
  name: string;
  /** The AI SDK language model, e.g. `createOpenAICompatible({ ... })('llama3')`. */
  model: AiSdkLanguageModel;
  /** Call options sent with every request (temperature, maxOutputTokens, providerOptions, ...), under the request's config. */
  config?: Record<string, unknown>;
  /**
   * Call `doStream` (default true), as the built-in providers stream: text reaches clients
   * (`keel run`, `RunHandle.events()`) while the model writes it, and the final response is put
   * together from the stream as `doGenerate`'s would be. `false` calls `doGenerate`; so does a
   * model without `doStream`.
   */
  stream?: boolean;
}

/** The call options of the specification a request's config may set; anything else is refused. */
const CALL_OPTIONS = new Set([
  'maxOutputTokens',
  'temperature',
  'stopSequences',
  'topP',
  'topK',
  'presencePenalty',
  'frequencyPenalty',
  'seed',
  'responseFormat',
  'toolChoice',
  'headers',
  'providerOptions',
]);

const SUPPORTED_VERSIONS = new Set(['v2', 'v3', 'v4']);

/** Declares a keel model that runs an AI SDK language model. */
export function aiSdkModel({ name, model, config = {}, stream = true }: AiSdkModelOptions): Model {
  if (typeof model?.doGenerate !== 'function' || !SUPPORTED_VERSIONS.has(model.specificationVersion)) {
    throw new TypeError(`aiSdkModel("${name}"): model must be an AI SDK LanguageModel of specification v2, v3 or v4 (AI SDK 5 to 7); got ${describe(model)}`);
  }
  return defineModel({
    name,
    async generate(request: ModelRequest, context): Promise<ModelResponse> {
      const options = callOptions(name, { ...config, ...request.config });
      let result: AiSdkGenerateResult;
      try {
        const call = {
          ...options,
          prompt: toPrompt(request.messages, model.specificationVersion),
          ...(request.tools.length
            ? {
                tools: request.tools.map((tool) => ({
                  type: 'function' as const,
                  name: tool.name,
                  description: tool.description,
                  inputSchema: tool.inputSchema,
                })),
              }
            : {}),
          // A structured answer: the specification's JSON response format (what the AI SDK's object output sends).
          ...(request.output?.format === 'json' ? { responseFormat: { type: 'json', schema: request.output.schema, name: request.output.name } } : {}),
          abortSignal: context.signal,
        };
        if (stream && typeof model.doStream === 'function') {
          const { stream: parts } = await (model.doStream as DoStream).call(model, call);
          result = await readStream(parts, context.stream, context.heartbeat);
        } else result = await (model.doGenerate as DoGenerate).call(model, call);
      } catch (error) {
        throw aiSdkError(name, error, context.signal);
      }
      return {
        message: { role: 'model', content: fromContent(name, result.content) },
        finishReason: finishReasonOf(result.finishReason),
        usage: usageOf(result.usage),
      };
    },
  });
}

/**
 * Reads a `doStream` answer into the shape of a `doGenerate` one: text and reasoning put
 * together by their ids in the order they started, tool calls, files and other parts as they
 * came, the finish reason and usage from the finish part. Each text delta is handed to
 * `onText` as it comes; an error part fails the call.
 */
async function readStream(
  stream: ReadableStream<StreamPart>,
  onText: ((delta: string) => void) | undefined,
  heartbeat: () => void,
): Promise<AiSdkGenerateResult> {
  const content: Array<{ type: string; [field: string]: unknown }> = [];
  const open = new Map<string, { type: string; text: string }>();
  let finishReason: AiSdkGenerateResult['finishReason'] = 'unknown';
  let usage: Record<string, unknown> = {};
  const piece = (type: 'text' | 'reasoning', id: unknown) => {
    const key = `${type}:${String(id)}`;
    let entry = open.get(key);
    if (!entry) {
      entry = { type, text: '' };
      open.set(key, entry);
      content.push(entry);
    }
    return entry;
  };
  const reader = stream.getReader();
  for (;;) {
    const { done, value: part } = await reader.read();
    if (done) break;
    switch (part.type) {
      case 'text-start':
      case 'reasoning-start':
        piece(part.type === 'text-start' ? 'text' : 'reasoning', part.id);
        break;
      case 'text-delta':
      case 'reasoning-delta': {
        const delta = typeof part.delta === 'string' ? part.delta : typeof part.textDelta === 'string' ? part.textDelta : '';
        piece(part.type === 'text-delta' ? 'text' : 'reasoning', part.id).text += delta;
        if (part.type === 'text-delta' && delta) onText?.(delta);
        heartbeat();
        break;
      }
      case 'text-end':
      case 'reasoning-end':
      case 'tool-input-start':
      case 'tool-input-delta':
      case 'tool-input-end':
      case 'stream-start':
      case 'response-metadata':
      case 'raw':
        break;
      case 'finish':
        finishReason = part.finishReason as AiSdkGenerateResult['finishReason'];
        usage = (part.usage as Record<string, unknown> | undefined) ?? {};
        break;
      case 'error':
        throw part.error;
      default: {
        const { type, ...rest } = part;
        content.push({ type, ...rest });
      }
    }
  }
  return { content, finishReason, usage };
}

function describe(value: unknown): string {
  if (typeof value !== 'object' || value === null) return String(value);
  const version = (value as { specificationVersion?: unknown }).specificationVersion;
  return version === undefined ? 'an object without specificationVersion' : `specification ${JSON.stringify(version)}`;
}

/** The request's config as call options; a key the specification does not know is an error naming it. */
function callOptions(name: string, config: Record<string, unknown>): Record<string, unknown> {
  const unknown = Object.keys(config).filter((key) => !CALL_OPTIONS.has(key));
  if (unknown.length) {
    throw new KeelError(
      'INVALID_ARGUMENT',
      `ai-sdk model "${name}": config ${unknown.map((key) => `"${key}"`).join(', ')} is not an AI SDK call option (${[...CALL_OPTIONS].join(', ')}); put provider settings under providerOptions`,
      { modelName: name },
    );
  }
  return config;
}

/** A `data:` URI's media type (if it names one) and its content in base64 (percent-encoded content re-encoded); undefined for any other URL. */
function dataUri(url: string): { mediaType: string | undefined; base64: string } | undefined {
  const data = /^data:([^;,]+)?(;base64)?,(.*)$/s.exec(url);
  if (!data) return undefined;
  return { mediaType: data[1], base64: data[2] ? data[3]! : Buffer.from(decodeURIComponent(data[3]!)).toString('base64') };
}

/** A media URL as a file part: a data URI's base64 content, or the URL itself. */
function filePart(url: string, contentType: string | undefined): AiSdkContentPart {
  const data = dataUri(url);
  if (data) return { type: 'file', mediaType: contentType ?? data.mediaType ?? 'application/octet-stream', data: data.base64 };
  return { type: 'file', mediaType: contentType ?? 'application/octet-stream', data: new URL(url) };
}

/**
 * A tool response as the specification's tool result output: a string as text, other output as
 * JSON, and a response carrying media (an MCP tool's image) as `content`: its text, then each
 * medium as the model's specification version shapes it. A v2 model has no URL media in tool
 * results: a medium given by URL is named in the text instead.
 */
function toolResultOutput(part: ToolResponse, version: string): AiSdkToolResultOutput {
  const { text, media } = toolResponseWire(part);
  if (media.length === 0) {
    const { output } = part;
    return typeof output === 'string' ? { type: 'text', value: output } : { type: 'json', value: output ?? null };
  }
  const items: AiSdkToolResultItem[] = text ? [{ type: 'text', text }] : [];
  for (const medium of media) items.push(toolResultMedium(medium, version));
  return { type: 'content', value: items };
}

function toolResultMedium({ url, contentType }: Media, version: string): AiSdkToolResultItem {
  const data = dataUri(url);
  const mediaType = contentType ?? data?.mediaType;
  const image = mediaType?.startsWith('image/') ?? false;
  if (data) {
    const type = version === 'v2' ? 'media' : image ? 'image-data' : 'file-data';
    return { type, data: data.base64, mediaType: mediaType ?? 'application/octet-stream' };
  }
  if (version === 'v2') return { type: 'text', text: `[${mediaType ?? 'media'}: ${url}]` };
  return image ? { type: 'image-url', url } : { type: 'file-url', url, ...(mediaType ? { mediaType } : {}) };
}

/**
 * keel's conversation as an AI SDK prompt for a model of specification `version`; a tool call
 * and its result share the request's ref as id.
 */
export function toPrompt(messages: readonly Message[], version = 'v3'): AiSdkMessage[] {
  const prompt: AiSdkMessage[] = [];
  for (const message of messages) {
    if (message.role === 'system') {
      prompt.push({ role: 'system', content: message.content.map((part) => ('text' in part ? part.text : '')).join('') });
      continue;
    }
    const content: AiSdkContentPart[] = [];
    for (const part of message.content) {
      if ('text' in part) content.push({ type: 'text', text: part.text });
      else if ('media' in part) content.push(filePart(part.media.url, part.media.contentType));
      else if ('toolRequest' in part)
        content.push({
          type: 'tool-call',
          toolCallId: part.toolRequest.ref ?? part.toolRequest.name,
          toolName: part.toolRequest.name,
          input: part.toolRequest.input ?? {},
        });
      else if ('toolResponse' in part)
        content.push({
          type: 'tool-result',
          toolCallId: part.toolResponse.ref ?? part.toolResponse.name,
          toolName: part.toolResponse.name,
          output: toolResultOutput(part.toolResponse, version),
        });
    }
    prompt.push({ role: message.role === 'model' ? 'assistant' : message.role, content });
  }
  return prompt;
}

/** The model's content as keel parts: text, tool requests (their JSON input parsed), files as media; reasoning kept as a custom part. */
function fromContent(name: string, content: AiSdkGenerateResult['content']): Part[] {
  const parts: Part[] = [];
  for (const item of content) {
    switch (item.type) {
      case 'text':
        if (typeof item.text === 'string' && item.text) parts.push({ text: item.text });
        break;
      case 'tool-call': {
        const toolName = String(item.toolName);
        const refusal = `sent malformed JSON input for tool "${toolName}"`;
        const text = typeof item.input === 'string' ? item.input : undefined;
        const input = text === undefined ? item.input : text.trim() ? parseModelJson(text, { provider: 'ai-sdk', model: name, refusal }) : {};
        parts.push({ toolRequest: { name: toolName, ref: String(item.toolCallId), input } });
        break;
      }
      case 'reasoning':
        if (typeof item.text === 'string' && item.text) parts.push({ custom: { reasoning: item.text } });
        break;
      case 'file': {
        const mediaType = String(item.mediaType ?? 'application/octet-stream');
        const data = item.data instanceof Uint8Array ? Buffer.from(item.data).toString('base64') : String(item.data);
        parts.push({ media: { url: `data:${mediaType};base64,${data}`, contentType: mediaType } });
        break;
      }
      default:
        // Sources, provider-executed tool results and approval requests have no keel part: kept as they came.
        parts.push({ custom: { aiSdk: item } });
    }
  }
  return parts;
}

/** The specification's finish reason (v2: a string; since v3: `{ unified, raw }`) as keel's. */
function finishReasonOf(reason: AiSdkGenerateResult['finishReason']): FinishReason {
  switch (typeof reason === 'string' ? reason : reason?.unified) {
    case 'stop':
    case 'tool-calls':
      return 'stop';
    case 'length':
      return 'length';
    case 'content-filter':
      return 'blocked';
    case 'interrupted':
      return 'interrupted';
    case 'error':
    case 'other':
      return 'other';
    default:
      return 'unknown';
  }
}

const count = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);

/** The specification's usage (v2: flat; since v3: nested totals) as keel's, whose outputTokens leave out reasoning. */
function usageOf(raw: Record<string, unknown> | undefined): Usage {
  if (!raw) return {};
  const nestedInput = typeof raw.inputTokens === 'object' && raw.inputTokens !== null ? (raw.inputTokens as Record<string, unknown>) : undefined;
  const nestedOutput = typeof raw.outputTokens === 'object' && raw.outputTokens !== null ? (raw.outputTokens as Record<string, unknown>) : undefined;
  const input = nestedInput ? count(nestedInput.total) : count(raw.inputTokens);
  const output = nestedOutput ? count(nestedOutput.total) : count(raw.outputTokens);
  const reasoning = nestedOutput ? count(nestedOutput.reasoning) : count(raw.reasoningTokens);
  const cached = nestedInput ? count(nestedInput.cacheRead) : count(raw.cachedInputTokens);
  const usage: Usage = {};
  if (input !== undefined) usage.inputTokens = input;
  // A negative count stays as given, for the usage check to refuse; only the difference is floored.
  if (output !== undefined) usage.outputTokens = reasoning !== undefined && output >= 0 ? Math.max(0, output - reasoning) : output;
  if (reasoning !== undefined) usage.thoughtsTokens = reasoning;
  if (cached !== undefined) usage.cachedContentTokens = cached;
  const total = nestedInput ? (input !== undefined && output !== undefined ? input + output : undefined) : count(raw.totalTokens);
  if (total !== undefined) usage.totalTokens = total;
  return usage;
}

/** An AI SDK failure as a KeelError: an API call's HTTP status (and Retry-After), a cancellation, or no answer at all. */
function aiSdkError(name: string, error: unknown, signal: AbortSignal): KeelError {
  if (KeelError.isInstance(error)) return error;
  if (signal.aborted) return new KeelError('CANCELLED', `ai-sdk model "${name}": request cancelled`, { modelName: name });
  const failure = error as {
    message?: string;
    statusCode?: unknown;
    responseHeaders?: Record<string, string>;
    responseBody?: unknown;
    cause?: { message?: string };
  };
  const message = failure?.message ?? String(error);
  if (typeof failure?.statusCode === 'number') {
    const retryAfterMs = parseRetryAfter(failure.responseHeaders?.['retry-after'] ?? null);
    return new KeelError(statusFromHttp(failure.statusCode), `ai-sdk model "${name}" answered HTTP ${failure.statusCode}: ${message.slice(0, 500)}`, {
      modelName: name,
      httpStatus: failure.statusCode,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    });
  }
  // An API call error without a status never got an answer (refused, reset, DNS).
  const apiCall = (error as { name?: string })?.name === 'AI_APICallError';
  return new KeelError(
    apiCall ? 'UNAVAILABLE' : 'INTERNAL',
    `ai-sdk model "${name}" ${apiCall ? 'could not be reached' : 'failed'}: ${failure?.cause?.message ?? message}`,
    { modelName: name },
  );
}
