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
import { KeelError } from '../../core/errors';
import { messageText, type Message, type ModelResponse } from '../../core/messages';
import { compress, summaryPrompt, type CompressionOptions, type CompressionStats, type Summarizer } from './compress';
import { COMPRESSION_KEY, DROP_NOTICE, reconcileNotices, resolveView, trustedEnd } from './view';
import { TokenCache } from './token-cache';
import { TIKTOKEN_ENCODINGS, countTokensDoor } from './tokens';
import { defineMiddleware } from '../../middleware/define-middleware';
import type { GenerateOutcome, GenerateParams, MiddlewareContext, ModelCallParams, Next } from '../../middleware/types';

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

/** The tool edit counts summed over the run and the runs before it in a long run's chain. */
const CompressionTotalsSchema = z.object({
  toolResponsesSafetyCapped: z.number(),
  toolResponsesDeduplicated: z.number(),
  toolResponsesTruncated: z.number(),
});
type CompressionTotals = z.output<typeof CompressionTotalsSchema>;

/** What `carry` hands the next run of a long run's chain: the newest stats (`CompressionStats`) and the cumulative counts. */
const CompressionCarrySchema = z.object({
  latestStats: CompressionTotalsSchema.extend({
    triggered: z.boolean(),
    inputTokensBefore: z.number(),
    messagesOriginal: z.number(),
    messagesAfter: z.number(),
    truncationNoticeInserted: z.boolean(),
    summarized: z.boolean(),
    summarizationSkipped: z.boolean(),
  }).optional(),
  totals: CompressionTotalsSchema,
});

export const contextCompression = defineMiddleware({
  name: 'contextCompression',
  description: 'Keeps the model’s view under a token or message budget: caps, deduplicates and truncates tool responses, summarizes or drops older turns.',
  configSchema: ContextCompressionConfigSchema,
  carrySchema: CompressionCarrySchema,
  create: (config, context) => {
    checkSummarizerModel(config.summarize, context.agent.models);
    const stage: CompressionStage = {
      options: compressionOptions(config),
      summarizer: config.summarize ? modelSummarizer(config.summarize, context) : undefined,
      noticeText: config.truncationNotice || DROP_NOTICE,
      tokens: config.tokenizer === 'tiktoken' ? new TokenCache(config.encoding, (input) => context.activity(countTokensDoor, input)) : undefined,
      replaceHistory: config.replaceHistory,
      state: restoredState(context.carried),
    };
    return {
      carry: () => ({ ...(stage.state.latestStats ? { latestStats: stage.state.latestStats } : {}), totals: stage.state.totals }),
      wrapGenerate: (params, next) => compressIteration(stage, params, next),
      wrapModel: (params, next) => sendView(stage, params, next),
    };
  },
});

/** ContextCompression's config as `create` gets it (defaults applied). */
type ParsedConfig = z.output<typeof ContextCompressionConfigSchema>;

/** One run's compression state, shared by its hooks. */
interface CompressionState {
  /** The input tokens the model last reported. */
  reportedTokens: number | undefined;
  /** The message objects this run stamped with a boundary (trusted even when they trail). */
  stampedByRun: WeakSet<Message>;
  /** The newest stats, with the cumulative counts. */
  latestStats: CompressionStats | undefined;
  totals: CompressionTotals;
  /** The iteration this run started at: its outermost (the run's final message gets the stats there). */
  outermost: number | undefined;
}

/** What one run's hooks work with: what `create` made from the config, and the run's state. */
interface CompressionStage {
  options: CompressionOptions;
  summarizer: Summarizer | undefined;
  /** The drop notice's text. */
  noticeText: string;
  /** The tokenizer's counts, when the config asks for tiktoken. */
  tokens: TokenCache | undefined;
  replaceHistory: boolean;
  state: CompressionState;
}

/** A summarizer model the agent does not register fails the run's start with NOT_FOUND, naming the registered ones. */
function checkSummarizerModel(summarize: ParsedConfig['summarize'], models: readonly string[] | undefined): void {
  if (summarize && models && !models.includes(summarize.model)) {
    throw new KeelError(
      'NOT_FOUND',
      `contextCompression: summarize.model "${summarize.model}" is not registered; registered models: ${models.join(', ') || '(none)'}`,
    );
  }
}

/**
 * The options of each decision, from the config. A 0 means "not set" for these counts and
 * limits, so their defaults apply: preserveRecent 4, the safety cap 400000, dedupe keepRecent 1,
 * toolResponses.preserveRecent 2, summarize.preserveRecent the config's preserveRecent or 6.
 */
function compressionOptions(config: ParsedConfig): CompressionOptions {
  const summarize = config.summarize;
  return {
    maxInputTokens: config.maxInputTokens,
    maxMessages: config.maxMessages,
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
}

/**
 * The summarizer: one call of `summarize.model` through the model activity, with the summary
 * prompt and no tools. A failure (other than cancellation, which ends the run), a finish reason
 * other than `stop` or an empty text gives no summary (undefined), and older messages are dropped.
 */
function modelSummarizer(summarize: NonNullable<ParsedConfig['summarize']>, context: Pick<MiddlewareContext, 'callModel'>): Summarizer {
  return async (messages: Message[]): Promise<string | undefined> => {
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
  };
}

/** A run's starting state: the newest stats and the cumulative counts carried from the previous run of the chain, if any. */
function restoredState(restored: z.output<typeof CompressionCarrySchema> | undefined): CompressionState {
  return {
    reportedTokens: undefined,
    stampedByRun: new WeakSet<Message>(),
    latestStats: restored?.latestStats,
    totals: restored?.totals ?? { toolResponsesSafetyCapped: 0, toolResponsesDeduplicated: 0, toolResponsesTruncated: 0 },
    outermost: undefined,
  };
}

/** Whether the message at an index of `messages` carries a boundary this run stamped. */
const trustedIn = (state: CompressionState, messages: readonly Message[]) => (index: number) => state.stampedByRun.has(messages[index]!);

/**
 * One iteration (wrapGenerate): the caller's forged boundaries removed, one compression decision,
 * the next stage given the stamped history (or the view, with replaceHistory); at the run's
 * outermost iteration the final message gets the newest stats.
 */
async function compressIteration(stage: CompressionStage, params: GenerateParams, next: Next<GenerateParams, GenerateOutcome>): Promise<GenerateOutcome> {
  const { state, tokens } = stage;
  state.outermost ??= params.iteration;
  // A caller's forged boundaries go, and standalone notices a saved view carried fold into the system message.
  const messages = reconcileNotices(sanitized(params.messages, state.stampedByRun), stage.noticeText).messages;
  const result = await compress(messages, stage.options, {
    tokens: state.reportedTokens ?? stampedTokens(messages),
    summarizer: stage.summarizer,
    trusted: trustedIn(state, messages),
    ...(tokens ? { measure: (messages: readonly Message[]) => tokens.measure(messages) } : {}),
  });
  if (result.stamped !== undefined) state.stampedByRun.add(result.history[result.stamped]!);
  if (result.stats) recordStats(state, result.stats);
  const outcome = await next({ ...params, messages: stage.replaceHistory ? result.view : result.history });
  if (params.iteration !== state.outermost || !state.latestStats) return outcome;
  return withFinalStats(outcome, state.latestStats);
}

/**
 * Adds a decision's tool edit counts to the totals; the newest stats are the decision's, with
 * the totals, and with truncationNoticeInserted and summarized kept once set.
 */
function recordStats(state: CompressionState, stats: CompressionStats): void {
  const totals = state.totals;
  totals.toolResponsesSafetyCapped += stats.toolResponsesSafetyCapped;
  totals.toolResponsesDeduplicated += stats.toolResponsesDeduplicated;
  totals.toolResponsesTruncated += stats.toolResponsesTruncated;
  state.latestStats = {
    ...stats,
    ...totals,
    truncationNoticeInserted: stats.truncationNoticeInserted || (state.latestStats?.truncationNoticeInserted ?? false),
    summarized: stats.summarized || (state.latestStats?.summarized ?? false),
  };
}

/** The outcome with the stats on the run's final message: the response's message and the last of the conversation. */
function withFinalStats(outcome: GenerateOutcome, stats: CompressionStats): GenerateOutcome {
  const final = outcome.response.message;
  const stamped: Message = {
    ...final,
    metadata: { ...final.metadata, [COMPRESSION_KEY]: { ...(final.metadata?.[COMPRESSION_KEY] as object | undefined), stats } },
  };
  return { response: { ...outcome.response, message: stamped }, messages: [...outcome.messages.slice(0, -1), stamped] };
}

/**
 * One model call (wrapModel): the model is sent the view of the request's messages, and a
 * response that reports input tokens is stamped with them (the next decision starts from them).
 */
async function sendView(stage: CompressionStage, params: ModelCallParams, next: Next<ModelCallParams, ModelResponse>): Promise<ModelResponse> {
  const messages = params.request.messages;
  const view = reconcileNotices(resolveView(messages, trustedIn(stage.state, messages)).messages, stage.noticeText).messages;
  const response = await next({ ...params, request: { ...params.request, messages: view } });
  const reported = response.usage.inputTokens;
  if (!reported || reported <= 0) return response;
  stage.state.reportedTokens = reported;
  const message = response.message;
  return {
    ...response,
    message: {
      ...message,
      metadata: { ...message.metadata, [COMPRESSION_KEY]: { ...(message.metadata?.[COMPRESSION_KEY] as object | undefined), inputTokens: reported } },
    },
  };
}
