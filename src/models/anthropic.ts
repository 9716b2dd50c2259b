/**
 * The `anthropic` provider: the Messages API with tools, usage and stop reasons. No
 * client-side retries (Temporal and the Retry middleware own retrying). Node side: runs in
 * the model activity.
 */
import { z } from 'zod';
import { KeelError } from '../core/errors';
import { toolResponseWire, type FinishReason, type Message, type ModelRequest, type ModelResponse, type Part, type ToolResponse } from '../core/messages';
import type { Usage } from '../core/usage';
import { providerSchema } from '../core/output';
import { defineModel, type Model, type ModelContext } from '../define';
import { isEventStream, parseModelJson, postRequest, readJson, serverSentEvents } from './http';

/** Options of an Anthropic model. */
export interface AnthropicOptions {
  /** Registered name, e.g. `anthropic/claude-sonnet-4-5`. */
  name: string;
  /** The provider's model id; defaults to the part of `name` after the first `/`. */
  model?: string;
  /** Defaults to $ANTHROPIC_BASE_URL, then https://api.anthropic.com. */
  baseUrl?: string;
  /** Defaults to $ANTHROPIC_API_KEY. */
  apiKey?: string;
  /** Extra request fields (temperature, ...), merged under the request's config. */
  config?: Record<string, unknown>;
  /** max_tokens when neither config sets it (the API requires one). Default 4096. */
  maxTokens?: number;
  /** Per-request timeout in ms (default 10 minutes). */
  timeoutMs?: number;
  /**
   * Ask for the answer as a stream (default true): text reaches clients while the model
   * writes. A server that answers with plain JSON anyway is read as such.
   */
  stream?: boolean;
}

/** The API version header keel speaks. */
export const ANTHROPIC_VERSION = '2023-06-01';

const ResponseSchema = z.object({
  content: z.array(
    z.union([
      z.object({ type: z.literal('text'), text: z.string() }),
      z.object({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.unknown() }),
      z.object({ type: z.string() }).loose(),
    ]),
  ),
  stop_reason: z.string().nullable().optional(),
  usage: z
    .object({
      input_tokens: z.number().optional(),
      output_tokens: z.number().optional(),
      cache_read_input_tokens: z.number().nullable().optional(),
      cache_creation_input_tokens: z.number().nullable().optional(),
    })
    .optional(),
});

type Block = Record<string, unknown>;
interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

/** Converts keel messages to a system prompt and alternating user/assistant messages. */
export function toAnthropicMessages(messages: Message[]): { system: string | undefined; messages: AnthropicMessage[] } {
  const system: string[] = [];
  const out: AnthropicMessage[] = [];
  const push = (role: AnthropicMessage['role'], blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = out.at(-1);
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const message of messages) {
    if (message.role === 'system') {
      system.push(message.content.map((part) => ('text' in part ? part.text : '')).join(''));
      continue;
    }
    const blocks: Block[] = [];
    for (const part of message.content) {
      if ('text' in part && part.text) blocks.push({ type: 'text', text: part.text });
      else if ('toolRequest' in part)
        blocks.push({ type: 'tool_use', id: part.toolRequest.ref ?? part.toolRequest.name, name: part.toolRequest.name, input: part.toolRequest.input ?? {} });
      else if ('toolResponse' in part) {
        const output = part.toolResponse.output;
        const isError = typeof output === 'object' && output !== null && 'error' in output && part.metadata?.toolError === true;
        blocks.push({
          type: 'tool_result',
          tool_use_id: part.toolResponse.ref ?? part.toolResponse.name,
          content: toolResultContent(part.toolResponse),
          ...(isError ? { is_error: true } : {}),
        });
      }
    }
    push(message.role === 'model' ? 'assistant' : 'user', blocks);
  }
  return { system: system.length ? system.join('\n\n') : undefined, messages: out };
}

/**
 * A tool_result's content: the text alone, or text and image blocks when the response carries
 * media (a data URI becomes a base64 source, any other URL a url source).
 */
function toolResultContent(response: ToolResponse): string | Block[] {
  const { text, media } = toolResponseWire(response);
  if (!media.length) return text;
  const images = media.map((item): Block => {
    const data = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s.exec(item.url);
    if (data) return { type: 'image', source: { type: 'base64', media_type: item.contentType ?? data[1], data: data[2] } };
    return { type: 'image', source: { type: 'url', url: item.url } };
  });
  return [...(text ? [{ type: 'text', text }] : []), ...images];
}

function finishReasonOf(reason: string | null | undefined): FinishReason {
  switch (reason) {
    case 'end_turn':
    case 'tool_use':
    case 'stop_sequence':
      return 'stop';
    case 'max_tokens':
      return 'length';
    case 'refusal':
      return 'blocked';
    case null:
    case undefined:
      return 'unknown';
    default:
      return 'other';
  }
}

/** 529 is Anthropic's "overloaded": a transient condition, not an internal error. */
function overloaded(httpStatus: number, error: KeelError): KeelError {
  return httpStatus === 529 ? new KeelError('UNAVAILABLE', error.message, error.details) : error;
}

type MessageResponse = z.output<typeof ResponseSchema>;

/**
 * Reads a streamed Messages answer (message_start, content blocks with their deltas,
 * message_delta, message_stop) into the shape of a whole one, handing each piece of text to
 * the context's `stream` as it comes. A tool's input arrives as pieces of JSON.
 */
async function readMessageStream(name: string, response: Response, context: ModelContext): Promise<MessageResponse> {
  const blocks: Array<{ type: string; text?: string; id?: string; name?: string; json?: string; input?: unknown }> = [];
  let stopReason: string | null = null;
  const usage: NonNullable<MessageResponse['usage']> = {};
  for await (const { data } of serverSentEvents(response, { provider: 'anthropic', model: name, signal: context.signal })) {
    const event = parseModelJson(data, { provider: 'anthropic', model: name, refusal: `sent a stream event keel cannot read: ${data.slice(0, 200)}` }) as {
      type?: string;
      index?: number;
      message?: { usage?: MessageResponse['usage'] };
      content_block?: { type: string; text?: string; id?: string; name?: string; input?: unknown };
      delta?: { type?: string; text?: string; partial_json?: string; stop_reason?: string | null };
      usage?: MessageResponse['usage'];
      error?: { type?: string; message?: string };
    };
    context.heartbeat();
    switch (event.type) {
      case 'message_start':
        Object.assign(usage, event.message?.usage);
        break;
      case 'content_block_start':
        blocks[event.index ?? blocks.length] = { ...event.content_block!, ...(event.content_block?.type === 'tool_use' ? { json: '' } : {}) };
        break;
      case 'content_block_delta': {
        const block = blocks[event.index ?? blocks.length - 1];
        if (!block) break;
        if (event.delta?.type === 'text_delta' && event.delta.text) {
          block.text = (block.text ?? '') + event.delta.text;
          context.stream?.(event.delta.text);
        } else if (event.delta?.type === 'input_json_delta' && event.delta.partial_json) block.json = (block.json ?? '') + event.delta.partial_json;
        break;
      }
      case 'message_delta':
        if (event.delta?.stop_reason) stopReason = event.delta.stop_reason;
        Object.assign(usage, event.usage);
        break;
      case 'error': {
        const overloadedError = event.error?.type === 'overloaded_error';
        throw new KeelError(
          overloadedError ? 'UNAVAILABLE' : 'INTERNAL',
          `anthropic model "${name}" failed mid-stream: ${event.error?.message ?? event.error?.type ?? 'error'}`,
          { modelName: name },
        );
      }
    }
  }
  const content = blocks.filter(Boolean).map((block) => {
    if (block.type !== 'tool_use') return block;
    const input = block.json
      ? parseModelJson(block.json, { provider: 'anthropic', model: name, refusal: `sent malformed JSON input for tool "${block.name}"` })
      : (block.input ?? {});
    return { type: 'tool_use', id: block.id ?? '', name: block.name ?? '', input };
  });
  return ResponseSchema.parse({ content, stop_reason: stopReason, usage });
}

/** Declares a model served by the Anthropic Messages API. */
export function anthropicModel(options: AnthropicOptions): Model {
  const providerModel = options.model ?? options.name.slice(options.name.indexOf('/') + 1);
  return defineModel({
    name: options.name,
    async generate(request: ModelRequest, context): Promise<ModelResponse> {
      const baseUrl = (options.baseUrl ?? process.env.ANTHROPIC_BASE_URL ?? 'https://api.anthropic.com').replace(/\/+$/, '');
      const apiKey = options.apiKey ?? process.env.ANTHROPIC_API_KEY;
      const { system, messages } = toAnthropicMessages(request.messages);
      const config = { ...options.config, ...request.config };
      const answerTool =
        request.output?.format === 'json'
          ? {
              name: request.output.name,
              description: 'Give your final answer: call this with the answer as its input.',
              input_schema: providerSchema(request.output.schema),
            }
          : undefined;
      const body = {
        max_tokens: options.maxTokens ?? 4096,
        ...config,
        model: providerModel,
        ...(system ? { system } : {}),
        messages,
        ...(request.tools.length || answerTool
          ? {
              tools: [
                ...request.tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.inputSchema })),
                ...(answerTool ? [answerTool] : []),
              ],
            }
          : {}),
        // A structured answer is a forced tool: that one alone, or any tool when the agent has tools of its own.
        ...(answerTool ? { tool_choice: request.tools.length ? { type: 'any' } : { type: 'tool', name: answerTool.name } } : {}),
      };
      const stream = options.stream ?? true;
      const response = await postRequest({
        provider: 'anthropic',
        model: options.name,
        url: `${baseUrl}/v1/messages`,
        headers: { 'anthropic-version': ANTHROPIC_VERSION, ...(apiKey ? { 'x-api-key': apiKey } : {}) },
        body: stream ? { ...body, stream: true } : body,
        timeoutMs: options.timeoutMs ?? 600_000,
        signal: context.signal,
        adjustError: overloaded,
      });
      const data = isEventStream(response)
        ? await readMessageStream(options.name, response, context)
        : await readJson('anthropic', options.name, response, ResponseSchema);
      const content: Part[] = [];
      let answered = false;
      for (const block of data.content) {
        if (block.type === 'text' && 'text' in block && typeof block.text === 'string') content.push({ text: block.text });
        else if (block.type === 'tool_use' && 'name' in block && block.name === answerTool?.name) {
          // The forced tool's input is the answer: it becomes the answer's text (any text before it is the model thinking aloud).
          content.splice(0, content.length, { text: JSON.stringify('input' in block ? block.input : {}) });
          answered = true;
          break;
        } else if (block.type === 'tool_use' && 'id' in block && typeof block.id === 'string' && 'name' in block && typeof block.name === 'string') {
          content.push({ toolRequest: { name: block.name, ref: block.id, input: 'input' in block ? block.input : {} } });
        }
      }
      const raw = data.usage;
      const usage: Usage = {};
      // Anthropic's input_tokens leave out what was read from or written to its cache; keel's inputTokens count all of the input.
      const cacheRead = typeof raw?.cache_read_input_tokens === 'number' ? raw.cache_read_input_tokens : 0;
      const cacheWrite = typeof raw?.cache_creation_input_tokens === 'number' ? raw.cache_creation_input_tokens : 0;
      const input = raw?.input_tokens !== undefined ? raw.input_tokens + cacheRead + cacheWrite : undefined;
      if (input !== undefined) usage.inputTokens = input;
      if (raw?.output_tokens !== undefined) usage.outputTokens = raw.output_tokens;
      if (input !== undefined && raw?.output_tokens !== undefined) usage.totalTokens = input + raw.output_tokens;
      if (typeof raw?.cache_read_input_tokens === 'number') usage.cachedContentTokens = raw.cache_read_input_tokens;
      return { message: { role: 'model', content }, finishReason: answered ? 'stop' : finishReasonOf(data.stop_reason), usage };
    },
  });
}
