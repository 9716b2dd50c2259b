/**
 * The `openai-compatible` provider: the Chat Completions wire format with tools and usage,
 * as spoken by OpenAI, Ollama, vLLM and llama.cpp's server. No client-side retries.
 * Node side: runs in the model activity.
 */
import { z } from 'zod';
import { KeelError } from '../core/errors';
import { toolResponseWire, type FinishReason, type Message, type ModelRequest, type ModelResponse, type Part } from '../core/messages';
import type { Usage } from '../core/usage';
import { providerSchema } from '../core/output';
import { defineModel, type Model, type ModelContext } from '../define';
import { isEventStream, parseModelJson, postRequest, readJson, serverSentEvents } from './http';

/** Options of an OpenAI-compatible model. */
export interface OpenAICompatibleOptions {
  /** Registered name, e.g. `openai/gpt-4o-mini`. */
  name: string;
  /** The provider's model id; defaults to the part of `name` after the first `/`. */
  model?: string;
  /** Defaults to $OPENAI_BASE_URL, then https://api.openai.com/v1. */
  baseUrl?: string;
  /** Defaults to $OPENAI_API_KEY; may be absent for local servers. */
  apiKey?: string;
  /** Extra request fields (temperature, max_tokens, ...), merged under the request's config. */
  config?: Record<string, unknown>;
  /** Per-request timeout in ms (default 10 minutes); the activity's timeout still applies. */
  timeoutMs?: number;
  /**
   * Ask for the answer as a stream (default true): text reaches clients while the model
   * writes (`keel run`, `RunHandle.events()`). A server that answers with plain JSON anyway
   * is read as such.
   */
  stream?: boolean;
}

const ChatResponseSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullable().optional(),
          tool_calls: z
            .array(z.object({ id: z.string(), function: z.object({ name: z.string(), arguments: z.string() }) }))
            .nullable()
            .optional(),
        }),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1),
  usage: z
    .object({
      prompt_tokens: z.number().optional(),
      completion_tokens: z.number().optional(),
      total_tokens: z.number().optional(),
      completion_tokens_details: z.object({ reasoning_tokens: z.number().optional() }).nullable().optional(),
      prompt_tokens_details: z.object({ cached_tokens: z.number().optional() }).nullable().optional(),
    })
    .nullable()
    .optional(),
});

type ChatMessage = Record<string, unknown>;

/** Converts keel messages to Chat Completions messages. */
export function toChatMessages(messages: Message[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const message of messages) {
    const text = message.content.map((part) => ('text' in part ? part.text : '')).join('');
    if (message.role === 'system' || message.role === 'user') {
      out.push({ role: message.role, content: text });
    } else if (message.role === 'model') {
      const toolCalls = message.content.flatMap((part) =>
        'toolRequest' in part
          ? [
              {
                id: part.toolRequest.ref ?? part.toolRequest.name,
                type: 'function',
                function: { name: part.toolRequest.name, arguments: JSON.stringify(part.toolRequest.input ?? {}) },
              },
            ]
          : [],
      );
      out.push({ role: 'assistant', content: text || null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) });
    } else {
      // A tool message carries text only in Chat Completions: a response's images follow the
      // tool messages of the turn as one user message of image_url parts (data URIs as they are).
      const images: ChatMessage[] = [];
      for (const part of message.content) {
        if ('toolResponse' in part) {
          const { text, media } = toolResponseWire(part.toolResponse);
          const id = part.toolResponse.ref ?? part.toolResponse.name;
          out.push({ role: 'tool', tool_call_id: id, content: text });
          if (media.length)
            images.push(
              { type: 'text', text: `Images from tool call ${id} (${part.toolResponse.name}):` },
              ...media.map((item) => ({ type: 'image_url', image_url: { url: item.url } })),
            );
        }
      }
      if (images.length) out.push({ role: 'user', content: images });
    }
  }
  return out;
}

function finishReasonOf(reason: string | null | undefined): FinishReason {
  switch (reason) {
    case 'stop':
    case 'tool_calls':
    case 'function_call':
      return 'stop';
    case 'length':
      return 'length';
    case 'content_filter':
      return 'blocked';
    case null:
    case undefined:
      return 'unknown';
    default:
      return 'other';
  }
}

type ChatResponse = z.output<typeof ChatResponseSchema>;

/**
 * Reads a streamed Chat Completions answer (`data:` chunks, then `[DONE]`) into the shape of a
 * whole one, handing each piece of text to the context's `stream` as it comes. Tool calls
 * arrive in pieces by index: the first names the call, the rest extend its arguments.
 */
async function readChatStream(name: string, response: Response, context: ModelContext): Promise<ChatResponse> {
  let text = '';
  let finishReason: string | null = null;
  let usage: ChatResponse['usage'];
  const calls: Array<{ id: string; function: { name: string; arguments: string } }> = [];
  for await (const { data } of serverSentEvents(response, { provider: 'openai-compatible', model: name, signal: context.signal })) {
    if (data.trim() === '[DONE]') break;
    const chunk = parseModelJson(data, {
      provider: 'openai-compatible',
      model: name,
      refusal: `sent a stream chunk keel cannot read: ${data.slice(0, 200)}`,
    }) as {
      choices?: Array<{
        delta?: { content?: string | null; tool_calls?: Array<{ index?: number; id?: string; function?: { name?: string; arguments?: string } }> };
        finish_reason?: string | null;
      }>;
      usage?: ChatResponse['usage'];
      error?: { message?: string };
    };
    if (chunk.error)
      throw new KeelError('UNAVAILABLE', `openai-compatible model "${name}" failed mid-stream: ${chunk.error.message ?? 'error'}`, { modelName: name });
    if (chunk.usage) usage = chunk.usage;
    context.heartbeat();
    for (const choice of chunk.choices ?? []) {
      const delta = choice.delta;
      if (delta?.content) {
        text += delta.content;
        context.stream?.(delta.content);
      }
      for (const piece of delta?.tool_calls ?? []) {
        const index = piece.index ?? calls.length;
        const call = (calls[index] ??= { id: '', function: { name: '', arguments: '' } });
        if (piece.id) call.id = piece.id;
        if (piece.function?.name) call.function.name += piece.function.name;
        if (piece.function?.arguments) call.function.arguments += piece.function.arguments;
      }
      if (choice.finish_reason) finishReason = choice.finish_reason;
    }
  }
  const toolCalls = calls.filter(Boolean).map((call, index) => ({ ...call, id: call.id || `call_${index}` }));
  return { choices: [{ message: { content: text || null, tool_calls: toolCalls.length ? toolCalls : null }, finish_reason: finishReason }], usage };
}

/** Declares a model served over the OpenAI-compatible Chat Completions API. */
export function openAICompatibleModel(options: OpenAICompatibleOptions): Model {
  const providerModel = options.model ?? options.name.slice(options.name.indexOf('/') + 1);
  return defineModel({
    name: options.name,
    async generate(request: ModelRequest, context): Promise<ModelResponse> {
      const baseUrl = (options.baseUrl ?? process.env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1').replace(/\/+$/, '');
      const apiKey = options.apiKey ?? process.env.OPENAI_API_KEY;
      const body = {
        ...options.config,
        ...request.config,
        model: providerModel,
        messages: toChatMessages(request.messages),
        ...(request.tools.length
          ? {
              tools: request.tools.map((tool) => ({
                type: 'function',
                function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
              })),
            }
          : {}),
        // A structured answer: the JSON Schema as OpenAI's `response_format` (the run checks the answer either way).
        ...(request.output?.format === 'json'
          ? { response_format: { type: 'json_schema', json_schema: { name: request.output.name, schema: providerSchema(request.output.schema) } } }
          : {}),
      };
      const stream = options.stream ?? true;
      const response = await postRequest({
        provider: 'openai-compatible',
        model: options.name,
        url: `${baseUrl}/chat/completions`,
        headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
        body: stream ? { ...body, stream: true, stream_options: { include_usage: true } } : body,
        timeoutMs: options.timeoutMs ?? 600_000,
        signal: context.signal,
      });
      const data = isEventStream(response)
        ? await readChatStream(options.name, response, context)
        : await readJson('openai-compatible', options.name, response, ChatResponseSchema);
      const choice = data.choices[0]!;
      const content: Part[] = [];
      if (choice.message.content) content.push({ text: choice.message.content });
      for (const call of choice.message.tool_calls ?? []) {
        const refusal = `sent malformed JSON arguments for tool "${call.function.name}"`;
        const input = call.function.arguments ? parseModelJson(call.function.arguments, { provider: 'openai-compatible', model: options.name, refusal }) : {};
        content.push({ toolRequest: { name: call.function.name, ref: call.id, input } });
      }
      const usage: Usage = {};
      const raw = data.usage;
      if (raw?.prompt_tokens !== undefined) usage.inputTokens = raw.prompt_tokens;
      // completion_tokens include the reasoning tokens; keel's outputTokens leave them out (they are thoughtsTokens).
      const reasoning = raw?.completion_tokens_details?.reasoning_tokens;
      // A negative count stays as given, for the usage check to refuse; only the difference is floored.
      if (raw?.completion_tokens !== undefined)
        usage.outputTokens = raw.completion_tokens < 0 ? raw.completion_tokens : Math.max(0, raw.completion_tokens - (reasoning ?? 0));
      if (raw?.total_tokens !== undefined) usage.totalTokens = raw.total_tokens;
      if (raw?.completion_tokens_details?.reasoning_tokens !== undefined) usage.thoughtsTokens = raw.completion_tokens_details.reasoning_tokens;
      if (raw?.prompt_tokens_details?.cached_tokens !== undefined) usage.cachedContentTokens = raw.prompt_tokens_details.cached_tokens;
      return { message: { role: 'model', content }, finishReason: finishReasonOf(choice.finish_reason), usage };
    },
  });
}
