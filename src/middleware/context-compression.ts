/**
 * ContextCompression (reference: genkit-middleware-exp/contextCompression, same options,
 * defaults, texts and metadata): keeps what the model sees under a token or message budget.
 * Each iteration decides a view (tool responses capped, duplicates replaced by a notice,
 * older responses truncated, older turns summarized by a model or dropped behind a notice)
 * and records the decision in the history's metadata; the history keeps every original, so
 * `resolveCompressedHistory(history)` rebuilds the view. Each model call sends the view and
 * stamps the response with the input tokens the model reported. Runs in the workflow; the
 * summarizer is a model call through the model activity, so Budget counts it.
 */
import { isCancellation, log } from '@temporalio/workflow';
import { z } from 'zod';
import { KeelError } from '../core/errors';
import { messageText, type Message } from '../core/messages';
import { compress, summaryPrompt, type CompressionOptions, type CompressionStats } from './compression/compress';
import { COMPRESSION_KEY, DROP_NOTICE, reconcileNotices, resolveView, trustedEnd } from './compression/view';
import { TokenCache } from './compression/token-cache';
import { TIKTOKEN_ENCODINGS } from '../core/tokens';
import { defineMiddleware } from './define-middleware';

const NonNegative = (what: string) => z.number().int(`${what} must be a whole number`).min(0, `${what} must not be negative`);

/** ContextCompression's config (the reference's JSON names and defaults). */
export const ContextCompressionConfigSchema = z
  .object({
    /** Compress when the conversation exceeds this many input tokens (0: no token budget). */
    maxInputTokens: NonNegative('maxInputTokens').default(0),
    /** Compress when the model would see more than this many messages (0: no limit). */
    maxMessages: NonNegative('maxMessages').default(0),
    /** Messages kept verbatim at the end when older ones are dropped. */
    preserveRecent: NonNegative('preserveRecent').optional(),
    /** Every tool response is capped at this many characters (negative: no cap). */
    maxToolResponseChars: z.number().int().default(400_000),
    /** Replace older responses of the same tool call by a notice. */
    deduplicateToolResponses: z
      .union([
        z.literal(true).transform(() => ({})),
        z
          .object({
            matchBy: z.enum(['name-and-input', 'name-only']).default('name-and-input'),
            keepRecent: NonNegative('deduplicateToolResponses.keepRecent').default(1),
            notice: z.string().optional(),
          })
          .strict(),
      ])
      .pipe(
        z.object({
          matchBy: z.enum(['name-and-input', 'name-only']).default('name-and-input'),
          keepRecent: z.number().default(1),
          notice: z.string().optional(),
        }),
      )
      .optional(),
    /** Truncate the responses of all but the newest `preserveRecent` tool messages to `maxChars`. */
    toolResponses: z
      .object({
        maxChars: z.number().int().positive('toolResponses.maxChars must be positive'),
        /** Negative: truncate every tool message. */
        preserveRecent: z.number().int().default(2),
      })
      .strict()
      .optional(),
    /** Summarize older turns with a model. */
    summarize: z
      .object({
        model: z.string().min(1, 'summarize.model is required'),
        preserveRecent: NonNegative('summarize.preserveRecent').optional(),
        prompt: z.string().optional(),
        /** Config sent to the summarizer verbatim. */
        config: z.record(z.string(), z.unknown()).optional(),
      })
      .strict()
      .optional(),
    /** Skip the summary when deduplication and truncation saved at least this share (0–1) and fit. */
    skipSummarizationThreshold: z
      .number()
      .min(0, 'skipSummarizationThreshold must be between 0 and 1')
      .max(1, 'skipSummarizationThreshold must be between 0 and 1')
      .default(0),
    /** The notice shown where messages were dropped (default: the reference's). */
    truncationNotice: z.string().optional(),
    /** Drop without a notice. */
    noTruncationNotice: z.boolean().default(false),
    /** Return the compressed conversation as the run's history instead of the stamped originals. */
    replaceHistory: z.boolean().default(false),
    /**
     * How tokens are counted when the model has not reported them: the reference's estimate
     * (characters / 3.5), or js-tiktoken in an activity, each message counted once.
     */
    tokenizer: z.enum(['estimate', 'tiktoken']).default('estimate'),
    /** The tiktoken encoding. */
    encoding: z.enum(TIKTOKEN_ENCODINGS).default('o200k_base'),
  })
  .strict();
export type ContextCompressionConfig = z.input<typeof ContextCompressionConfigSchema>;

/** Keys of a boundary record; a caller's trailing user message may not carry them. */
const BOUNDARY_KEYS = ['summary', 'stats', 'anchorUser', 'truncationNotice', 'preserveSystem'];

/**
 * The messages with boundary records removed from the trailing user messages (after the last
 * model or tool message) that this run did not stamp: a client cannot forge a summary or
 * make earlier messages disappear. The reference's legacy `compressedHistory` key goes too.
 */
function sanitized(messages: Message[], stampedByRun: WeakSet<Message>): Message[] {
  const end = trustedEnd(messages);
  return messages.map((message, index) => {
    const record = message.metadata?.[COMPRESSION_KEY] as Record<string, unknown> | undefined;
    const legacy = message.metadata !== undefined && 'compressedHistory' in message.metadata;
    if (index <= end || message.role !== 'user' || stampedByRun.has(message) || (!record && !legacy)) return message;
    const { compressedHistory: _legacy, [COMPRESSION_KEY]: _record, ...rest } = message.metadata!;
    const kept = record ? Object.fromEntries(Object.entries(record).filter(([key]) => !BOUNDARY_KEYS.includes(key))) : {};
    const metadata = Object.keys(kept).length ? { ...rest, [COMPRESSION_KEY]: kept } : rest;
    const { metadata: _old, ...bare } = message;
    return Object.keys(metadata).length ? { ...bare, metadata } : bare;
  });
}

/** The input tokens a model message was stamped with. */
function stampedTokens(messages: readonly Message[]): number | undefined {
  const newest = [...messages].reverse().find((message) => message.role === 'model');
  const value = (newest?.metadata?.[COMPRESSION_KEY] as { inputTokens?: unknown } | undefined)?.inputTokens;
  return typeof value === 'number' && value > 0 ? value : undefined;
}

export const contextCompression = defineMiddleware({
  name: 'contextCompression',
  description: 'Keeps the model’s view under a token or message budget: caps, deduplicates and truncates tool responses, summarizes or drops older turns.',
  configSchema: ContextCompressionConfigSchema,
  create: (config, context) => {
    const summarize = config.summarize;
    const models = context.agent.models;
    if (summarize && models && !models.includes(summarize.model)) {
      throw new KeelError(
        'NOT_FOUND',
        `contextCompression: summarize.model "${summarize.model}" is not registered; registered models: ${models.join(', ') || '(none)'}`,
      );
    }
    const options: CompressionOptions = {
      maxInputTokens: config.maxInputTokens,
      maxMessages: config.maxMessages,
      // As in the reference, 0 means "not set": the default applies.
      preserveRecent: config.preserveRecent || 4,
      preserveRecentSet: Boolean(config.preserveRecent),
      maxToolResponseChars: config.maxToolResponseChars || 400_000,
      ...(config.deduplicateToolResponses
        ? { deduplicateToolResponses: { ...config.deduplicateToolResponses, keepRecent: config.deduplicateToolResponses.keepRecent || 1 } }
        : {}),
      ...(config.toolResponses ? { toolResponses: { ...config.toolResponses, preserveRecent: config.toolResponses.preserveRecent || 2 } } : {}),
      ...(summarize ? { summarize: { preserveRecent: summarize.preserveRecent || config.preserveRecent || 6 } } : {}),
      skipSummarizationThreshold: config.skipSummarizationThreshold,
      ...(config.truncationNotice !== undefined ? { truncationNotice: config.truncationNotice } : {}),
      noTruncationNotice: config.noTruncationNotice,
    };
    const summarizer = summarize
      ? async (messages: Message[]): Promise<string | undefined> => {
          let response;
          try {
            response = await context.callModel(summarize.model, {
              messages: [{ role: 'user', content: [{ text: summaryPrompt(messages, summarize.prompt) }] }],
              tools: [],
              ...(summarize.config ? { config: summarize.config } : {}),
            });
          } catch (error) {
            // Cancellation ends the run (the main model is not called); any other failure falls back to dropping.
            if (isCancellation(error)) throw error;
            log.warn('contextCompression: the summarizer failed; dropping older messages instead', {
              error: error instanceof Error ? error.message : String(error),
            });
            return undefined;
          }
          const text = messageText(response.message).trim();
          if (response.finishReason !== 'stop' || !text) {
            log.warn('contextCompression: the summarizer gave no usable summary; dropping older messages instead', { finishReason: response.finishReason });
            return undefined;
          }
          return text;
        }
      : undefined;

    // Per-run state: the input tokens the model last reported, the message objects this run
    // stamped with a boundary (trusted even when they trail), the cumulative and newest stats.
    let reportedTokens: number | undefined;
    const stampedByRun = new WeakSet<Message>();
    // The newest stats and the cumulative counts go on in the next run of a long run's chain.
    type Totals = { toolResponsesSafetyCapped: number; toolResponsesDeduplicated: number; toolResponsesTruncated: number };
    const restored = context.carried as { latestStats?: CompressionStats; totals: Totals } | undefined;
    let latestStats: CompressionStats | undefined = restored?.latestStats;
    const totals: Totals = restored?.totals ?? { toolResponsesSafetyCapped: 0, toolResponsesDeduplicated: 0, toolResponsesTruncated: 0 };
    /** The iteration this run started at: its outermost (the run's final message gets the stats there). */
    let outermost: number | undefined;
    const trustedIn = (messages: readonly Message[]) => (index: number) => stampedByRun.has(messages[index]!);

    const noticeText = config.truncationNotice || DROP_NOTICE;
    const tokens = config.tokenizer === 'tiktoken' ? new TokenCache(config.encoding, context.countTokens) : undefined;

    return {
      carry: () => ({ ...(latestStats ? { latestStats } : {}), totals }),
      wrapGenerate: async (params, next) => {
        outermost ??= params.iteration;
        // A caller's forged boundaries go, and standalone notices a saved view carried fold into the system message.
        const messages = reconcileNotices(sanitized(params.messages, stampedByRun), noticeText).messages;
        const result = await compress(messages, options, {
          tokens: reportedTokens ?? stampedTokens(messages),
          summarizer,
          trusted: trustedIn(messages),
          ...(tokens ? { measure: (messages: readonly Message[]) => tokens.measure(messages) } : {}),
        });
        if (result.stamped !== undefined) stampedByRun.add(result.history[result.stamped]!);
        if (result.stats) {
          totals.toolResponsesSafetyCapped += result.stats.toolResponsesSafetyCapped;
          totals.toolResponsesDeduplicated += result.stats.toolResponsesDeduplicated;
          totals.toolResponsesTruncated += result.stats.toolResponsesTruncated;
          latestStats = {
            ...result.stats,
            ...totals,
            truncationNoticeInserted: result.stats.truncationNoticeInserted || (latestStats?.truncationNoticeInserted ?? false),
            summarized: result.stats.summarized || (latestStats?.summarized ?? false),
          };
        }
        const outcome = await next({ ...params, messages: config.replaceHistory ? result.view : result.history });
        if (params.iteration !== outermost || !latestStats) return outcome;
        // The newest stats go on the run's final message, as the reference reports them on the final response.
        const final = outcome.response.message;
        const stamped: Message = {
          ...final,
          metadata: { ...final.metadata, [COMPRESSION_KEY]: { ...(final.metadata?.[COMPRESSION_KEY] as object | undefined), stats: latestStats } },
        };
        return { response: { ...outcome.response, message: stamped }, messages: [...outcome.messages.slice(0, -1), stamped] };
      },
      wrapModel: async (params, next) => {
        const messages = params.request.messages;
        const view = reconcileNotices(resolveView(messages, trustedIn(messages)).messages, noticeText).messages;
        const response = await next({ ...params, request: { ...params.request, messages: view } });
        const reported = response.usage.inputTokens;
        if (!reported || reported <= 0) return response;
        reportedTokens = reported;
        const message = response.message;
        return {
          ...response,
          message: {
            ...message,
            metadata: { ...message.metadata, [COMPRESSION_KEY]: { ...(message.metadata?.[COMPRESSION_KEY] as object | undefined), inputTokens: reported } },
          },
        };
      },
    };
  },
});
