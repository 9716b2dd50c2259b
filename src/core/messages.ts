/**
 * Message, part and usage shapes (Genkit's), as zod schemas: the single source of truth
 * for what crosses the model activity and what a run returns. Pure: safe in workflow code.
 */
import { z } from 'zod';
import { UsageSchema } from './usage';

const Metadata = z.record(z.string(), z.unknown());

/** A request from the model to call a tool. */
export const ToolRequestSchema = z.object({
  name: z.string(),
  ref: z.string().optional(),
  input: z.unknown(),
});
export type ToolRequest = z.infer<typeof ToolRequestSchema>;

/** A tool's answer to one tool request (same name and ref). */
export const ToolResponseSchema = z.object({
  name: z.string(),
  ref: z.string().optional(),
  output: z.unknown(),
  content: z.array(z.record(z.string(), z.unknown())).optional(),
});
export type ToolResponse = z.infer<typeof ToolResponseSchema>;

/** A text part. */
export const TextPartSchema = z.object({ text: z.string(), metadata: Metadata.optional() });
/** A tool request part. */
export const ToolRequestPartSchema = z.object({ toolRequest: ToolRequestSchema, metadata: Metadata.optional() });
/** A tool response part. */
export const ToolResponsePartSchema = z.object({ toolResponse: ToolResponseSchema, metadata: Metadata.optional() });
/** A media part (URL or data URI). */
export const MediaPartSchema = z.object({
  media: z.object({ url: z.string(), contentType: z.string().optional() }),
  metadata: Metadata.optional(),
});
/** A custom part: provider-specific data. */
export const CustomPartSchema = z.object({ custom: z.record(z.string(), z.unknown()), metadata: Metadata.optional() });

/** One part of a message's content. */
export const PartSchema = z.union([TextPartSchema, ToolRequestPartSchema, ToolResponsePartSchema, MediaPartSchema, CustomPartSchema]);
export type Part = z.infer<typeof PartSchema>;
export type ToolRequestPart = z.infer<typeof ToolRequestPartSchema>;

/** Who wrote a message. */
export const RoleSchema = z.enum(['system', 'user', 'model', 'tool']);
export type Role = z.infer<typeof RoleSchema>;

/** One message of a conversation. */
export const MessageSchema = z.object({
  role: RoleSchema,
  content: z.array(PartSchema),
  metadata: Metadata.optional(),
});
export type Message = z.infer<typeof MessageSchema>;

/** Why a model call (or a run) ended. */
export const FinishReasonSchema = z.enum(['stop', 'length', 'blocked', 'interrupted', 'aborted', 'other', 'unknown']);
export type FinishReason = z.infer<typeof FinishReasonSchema>;

/** A tool as the model sees it: name, description, JSON schemas. */
export const ToolDefinitionSchema = z.object({
  name: z.string(),
  description: z.string(),
  inputSchema: z.record(z.string(), z.unknown()),
  outputSchema: z.record(z.string(), z.unknown()).optional(),
});
export type ToolDefinition = z.infer<typeof ToolDefinitionSchema>;

/** What a model is asked: the conversation, the tools it may request, its config. */
export const ModelRequestSchema = z.object({
  messages: z.array(MessageSchema),
  tools: z.array(ToolDefinitionSchema),
  config: z.record(z.string(), z.unknown()).optional(),
  /**
   * Constrains the answer: `enum` asks for exactly one of the listed words; `json` for one JSON
   * value matching `schema` (a JSON Schema), answered as the text of the response (a provider
   * asks for it its own way: OpenAI-compatible `response_format`, Anthropic a forced tool).
   */
  output: z
    .discriminatedUnion('format', [
      z.object({ format: z.literal('enum'), enum: z.array(z.string()).min(1) }),
      z.object({ format: z.literal('json'), schema: z.record(z.string(), z.unknown()), name: z.string().min(1) }),
    ])
    .optional(),
});
export type ModelRequest = z.infer<typeof ModelRequestSchema>;

/** What a model answers. */
export const ModelResponseSchema = z.object({
  message: MessageSchema,
  finishReason: FinishReasonSchema,
  usage: UsageSchema,
});
export type ModelResponse = z.infer<typeof ModelResponseSchema>;

/**
 * Metadata key of a message a middleware added to the conversation (file contents, a notice):
 * the middleware's name. Such a message is not the user's words: a middleware that reads what
 * the user asked for (an approval judge) leaves it out.
 */
export const INJECTED_BY = 'injectedBy';

/** True for a message a middleware injected (`metadata.injectedBy`). */
export function isInjected(message: Message): boolean {
  return typeof message.metadata?.[INJECTED_BY] === 'string';
}

/** The first 100 characters of a conversation's last user text (what a list of runs, or a run's summary, shows). */
export function promptExcerpt(messages: readonly Message[]): string {
  const user = [...messages].reverse().find((message) => message.role === 'user');
  const text = (user?.content ?? [])
    .flatMap((part) => ('text' in part ? [part.text] : []))
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
  const chars = [...text];
  return chars.length > 100 ? `${chars.slice(0, 99).join('')}…` : text;
}

/** `text` cut to `chars` UTF-16 units with `…` at the cut (never half a surrogate pair). */
export function cutText(text: string, chars: number): string {
  if (text.length <= chars) return text;
  const cut = text.slice(0, chars - 1);
  return `${/[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut}…`;
}

/** The text parts of a message, joined. */
export function messageText(message: Message | undefined): string {
  if (!message) return '';
  return message.content.map((part) => ('text' in part && typeof part.text === 'string' ? part.text : '')).join('');
}

/** The tool request parts of a message. */
export function toolRequestParts(message: Message): ToolRequestPart[] {
  return message.content.filter((part): part is ToolRequestPart => 'toolRequest' in part);
}

/**
 * The message with a ref on every tool request: one the model gave is kept; one it did not
 * give gets its part's position, or the next number no other request of the message uses.
 */
export function assignToolRefs(message: Message): Message {
  const taken = new Set(message.content.flatMap((part) => ('toolRequest' in part && part.toolRequest.ref ? [part.toolRequest.ref] : [])));
  let spare = message.content.length;
  const content = message.content.map((part, index): Part => {
    if (!('toolRequest' in part) || part.toolRequest.ref) return part;
    let ref = String(index);
    while (taken.has(ref)) ref = String(spare++);
    taken.add(ref);
    return { ...part, toolRequest: { ...part.toolRequest, ref } };
  });
  return { ...message, content };
}

/** The key of a model call's heartbeat details under which its streamed text travels. */
export const STREAM_DETAILS = 'keelStream';

/** What a model call's heartbeat carries while its response streams: the text so far. */
export interface StreamedText {
  /** The text of this attempt so far (not a delta: a client that missed a beat loses nothing). */
  text: string;
  /** Counts the pieces of text this attempt has streamed. */
  sequence: number;
  /** The activity attempt (a retried call streams again from its start). */
  attempt: number;
  model: string;
  /** Which call of the run to this model. */
  callIndex: number;
}

/** A media part's media: a URL or a data URI, with its content type. */
export type Media = z.infer<typeof MediaPartSchema>['media'];

/**
 * What a tool response tells the model, split for a provider's wire format: its text, and the
 * media it carries. Media come from the response's `content` parts and from an output of the
 * form `{ content: Part[] }` (an MCP tool's answer with images): then the text is that
 * output's text parts, and any other entry is kept as JSON in the text.
 */
export function toolResponseWire(response: ToolResponse): { text: string; media: Media[] } {
  const media: Media[] = [];
  const collect = (entries: ReadonlyArray<Record<string, unknown>>): string[] =>
    entries.flatMap((entry) => {
      const part = MediaPartSchema.safeParse(entry);
      if (part.success) {
        media.push(part.data.media);
        return [];
      }
      if (typeof entry.text === 'string' && Object.keys(entry).every((key) => key === 'text' || key === 'metadata')) return [entry.text];
      return [JSON.stringify(entry)];
    });
  const output = response.output;
  let text: string;
  const contentOutput =
    typeof output === 'object' &&
    output !== null &&
    !Array.isArray(output) &&
    Object.keys(output).length === 1 &&
    Array.isArray((output as { content?: unknown }).content)
      ? ((output as { content: unknown[] }).content.filter((entry) => typeof entry === 'object' && entry !== null) as Array<Record<string, unknown>>)
      : undefined;
  if (contentOutput && contentOutput.some((entry) => MediaPartSchema.safeParse(entry).success)) text = collect(contentOutput).join('\n');
  else text = typeof output === 'string' ? output : JSON.stringify(output ?? null);
  const extra = collect(response.content ?? []);
  if (extra.length) text = [text, ...extra].join('\n');
  return { text, media };
}

/** Messages per chunk of a carried conversation. */
const CHUNK_MESSAGES = 32;

/**
 * A carried conversation in chunks of 32 messages by position, each its own payload: the
 * conversation only grows at the end, so every chunk but the last is the same payload in the
 * next run of the chain, and a content-addressed store (keel's file driver) keeps it once; a fork sends its conversation the same way (src/client/fork.ts).
 */
export function messageChunks(messages: readonly Message[]): Message[][] {
  const chunks: Message[][] = [];
  for (let start = 0; start < messages.length; start += CHUNK_MESSAGES) chunks.push(messages.slice(start, start + CHUNK_MESSAGES));
  return chunks;
}

/** A model named in a middleware's config (Fallback's models, ToolApproval's judge): its name, and the config sent to it verbatim. */
export const ModelRefSchema = z.union([
  z
    .string()
    .min(1)
    .transform((name) => ({ name, config: undefined as Record<string, unknown> | undefined })),
  z.object({ name: z.string().min(1), config: z.record(z.string(), z.unknown()).optional() }).strict(),
]);
