/**
 * The `anthropic` provider: the Messages API with tools, usage and stop reasons. No
 * client-side retries (Temporal and the Retry middleware own retrying). Node side: runs in
 * the model activity.
 */
import { z } from 'zod';
import { KeelError } from '../core/errors';
import type { FinishReason, Message, ModelRequest, ModelResponse, Part, Usage } from '../core/messages';
import { defineModel, type Model } from '../define';
import { postJson } from './http';

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
      else if ('toolRequest' in part) blocks.push({ type: 'tool_use', id: part.toolRequest.ref ?? part.toolRequest.name, name: part.toolRequest.name, input: part.toolRequest.input ?? {} });
      else if ('toolResponse' in part) {
        const output = part.toolResponse.output;
        const isError = typeof output === 'object' && output !== null && 'error' in output && part.metadata?.toolError === true;
        blocks.push({
          type: 'tool_result',
          tool_use_id: part.toolResponse.ref ?? part.toolResponse.name,
          content: typeof output === 'string' ? output : JSON.stringify(output ?? null),
          ...(isError ? { is_error: true } : {}),
        });
      }
    }
    push(message.role === 'model' ? 'assistant' : 'user', blocks);
  }
  return { system: system.length ? system.join('\n\n') : undefined, messages: out };
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
      const body = {
        max_tokens: options.maxTokens ?? 4096,
        ...config,
        model: providerModel,
        ...(system ? { system } : {}),
        messages,
        ...(request.tools.length ? { tools: request.tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.inputSchema })) } : {}),
      };
      const data = await postJson({
        provider: 'anthropic',
        model: options.name,
        url: `${baseUrl}/v1/messages`,
        headers: { 'anthropic-version': ANTHROPIC_VERSION, ...(apiKey ? { 'x-api-key': apiKey } : {}) },
        body,
        timeoutMs: options.timeoutMs ?? 600_000,
        signal: context.signal,
        schema: ResponseSchema,
        // 529 is Anthropic's "overloaded": a transient condition, not an internal error.
        adjustError: (httpStatus, error) => (httpStatus === 529 ? new KeelError('UNAVAILABLE', error.message, error.details) : error),
      });
      const content: Part[] = [];
      for (const block of data.content) {
        if (block.type === 'text' && 'text' in block && typeof block.text === 'string') content.push({ text: block.text });
        else if (block.type === 'tool_use' && 'id' in block && typeof block.id === 'string' && 'name' in block && typeof block.name === 'string') {
          content.push({ toolRequest: { name: block.name, ref: block.id, input: 'input' in block ? block.input : {} } });
        }
      }
      const raw = data.usage;
      const usage: Usage = {};
      if (raw?.input_tokens !== undefined) usage.inputTokens = raw.input_tokens;
      if (raw?.output_tokens !== undefined) usage.outputTokens = raw.output_tokens;
      if (raw?.input_tokens !== undefined && raw.output_tokens !== undefined) usage.totalTokens = raw.input_tokens + raw.output_tokens;
      if (typeof raw?.cache_read_input_tokens === 'number') usage.cachedContentTokens = raw.cache_read_input_tokens;
      return { message: { role: 'model', content }, finishReason: finishReasonOf(data.stop_reason), usage };
    },
  });
}
