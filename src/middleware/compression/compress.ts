/**
 * One compression decision (docs/middleware/context-compression.md): given a history and what the run
 * knows of its size, decide what the model sees and record it in the history's metadata
 * (tool edits on the parts, a boundary on one message), so that `resolveView` of the
 * returned history is exactly the view. Pure except for the summarizer, which the caller
 * passes in; runs in the workflow.
 */
import type { Message, Part } from '../../core/messages';
import {
  COMPRESSION_KEY,
  DEDUPE_NOTICE,
  DROP_NOTICE,
  reconcileNotices,
  type ResolvedView,
  boundaryOf,
  estimateTokens,
  mediaDescriptor,
  isPinned,
  outputText,
  resolveView,
  toolResponseChars,
  type BoundaryRecord,
  type ToolEditRecord,
} from './view';

/** The options one decision needs (ContextCompression's config, defaults applied). */
export interface CompressionOptions {
  maxInputTokens: number;
  maxMessages: number;
  preserveRecent: number;
  /** True when the config set preserveRecent itself. */
  preserveRecentSet: boolean;
  maxToolResponseChars: number;
  deduplicateToolResponses?: { matchBy: 'name-and-input' | 'name-only'; keepRecent: number; notice?: string };
  toolResponses?: { maxChars: number; preserveRecent: number };
  summarize?: { preserveRecent: number };
  skipSummarizationThreshold: number;
  truncationNotice?: string;
  noTruncationNotice: boolean;
}

/** What a compression did, as the reference reports it. */
export interface CompressionStats {
  triggered: boolean;
  inputTokensBefore: number;
  messagesOriginal: number;
  messagesAfter: number;
  toolResponsesSafetyCapped: number;
  toolResponsesDeduplicated: number;
  toolResponsesTruncated: number;
  truncationNoticeInserted: boolean;
  summarized: boolean;
  summarizationSkipped: boolean;
}

/** The result of one decision. */
export interface CompressionResult {
  /** The history with the decision recorded (the originals, stamped). */
  history: Message[];
  /** What the model sees. */
  view: Message[];
  /** Index of the message carrying the boundary this decision stamped, if any. */
  stamped?: number;
  /** Set when anything changed. */
  stats?: CompressionStats;
}

/** Asks the summarizer about messages; undefined when it gave no usable summary. */
export type Summarizer = (messages: Message[]) => Promise<string | undefined>;

const recordOf = (part: Part): ToolEditRecord | undefined => part.metadata?.[COMPRESSION_KEY] as ToolEditRecord | undefined;
const isEdited = (record: ToolEditRecord | undefined) => Boolean(record?.truncated || record?.deduplicated);

/**
 * The input of the tool request each tool response of a view answers, keyed "view index:part
 * index" (absent: no request found, the response joins no group). A response reads its
 * request by ref among the turn's requests (the model message before its tool messages; ref
 * matches are claimed across all the turn's tool messages first), then by ref in any earlier
 * turn, then the request at its position among the turn's responses if the name agrees, then
 * the first unclaimed request of that name.
 */
export function answeredInputs(view: readonly Message[]): Map<string, unknown> {
  const inputs = new Map<string, unknown>();
  const byRef = new Map<string, unknown>();
  type Request = { name: string; ref?: string | undefined; input?: unknown };
  let requests: Request[] = [];
  let claimed = new Set<number>();
  let claimedByPart = new Map<string, Request>();
  let ordinal = 0;
  view.forEach((message, index) => {
    if (message.role === 'model') {
      requests = message.content.flatMap((part) => ('toolRequest' in part ? [part.toolRequest as Request] : []));
      for (const request of requests) if (request.ref) byRef.set(request.ref, request.input);
      claimed = new Set();
      claimedByPart = new Map();
      ordinal = 0;
      for (let next = index + 1; next < view.length && view[next]!.role === 'tool'; next++) {
        view[next]!.content.forEach((part, partIndex) => {
          if (!('toolResponse' in part) || !part.toolResponse.ref) return;
          const found = requests.findIndex((request, at) => !claimed.has(at) && request.ref === part.toolResponse.ref);
          if (found < 0) return;
          claimed.add(found);
          claimedByPart.set(`${next}:${partIndex}`, requests[found]!);
        });
      }
      return;
    }
    if (message.role !== 'tool') {
      requests = [];
      claimed = new Set();
      claimedByPart = new Map();
      ordinal = 0;
      return;
    }
    message.content.forEach((part, partIndex) => {
      if (!('toolResponse' in part)) return;
      const key = `${index}:${partIndex}`;
      const { name, ref } = part.toolResponse;
      const position = ordinal++;
      const byClaim = claimedByPart.get(key);
      if (byClaim) return inputs.set(key, byClaim.input);
      if (ref && byRef.has(ref)) return inputs.set(key, byRef.get(ref));
      let found = position < requests.length && !claimed.has(position) && requests[position]!.name === name ? position : -1;
      if (found < 0) found = requests.findIndex((request, at) => !claimed.has(at) && request.name === name);
      if (found < 0) return;
      claimed.add(found);
      inputs.set(key, requests[found]!.input);
    });
  });
  return inputs;
}

/** What a decision knows of its run. */
export interface CompressionRun {
  /** The model's last reported input tokens (or the stamp on the newest model message). */
  tokens?: number | undefined;
  summarizer?: Summarizer | undefined;
  /** History indexes whose boundary this run stamped (trusted even when they trail). */
  trusted?: (index: number) => boolean;
  /** Tokens of messages: the estimate by default, or a tokenizer's count. */
  measure?: (messages: readonly Message[]) => Promise<number>;
}

/** Decides one iteration's view. */
export async function compress(history: readonly Message[], options: CompressionOptions, run: CompressionRun = {}): Promise<CompressionResult> {
  const { tokens, summarizer, trusted, measure = (messages: readonly Message[]) => Promise.resolve(estimateTokens(messages)) } = run;
  // The view, with any standalone notice a saved view carried folded into the system message.
  const noticeText = options.truncationNotice || DROP_NOTICE;
  const resolve = (messages: readonly Message[], trust?: (index: number) => boolean): ResolvedView => {
    const resolvedView = resolveView(messages, trust);
    const { messages: reconciled, sources } = reconcileNotices(resolvedView.messages, noticeText);
    return { messages: reconciled, origins: sources.map((source) => resolvedView.origins[source]!), boundary: resolvedView.boundary };
  };
  const resolved = resolve(history, trusted);
  const view = resolved.messages;
  const estimate = await measure(view);
  // Without a token budget only a reported count is taken (the estimate stands in when there is none).
  const effective = options.maxInputTokens > 0 ? Math.max(tokens ?? 0, estimate) : (tokens ?? 0);
  const overBudget = options.maxInputTokens > 0 && effective > options.maxInputTokens;
  const trigger = overBudget || (options.maxMessages > 0 && view.length > options.maxMessages);

  // Tool edits, by "history index:part index", starting from those already recorded.
  const records = new Map<string, ToolEditRecord>();
  const toolParts: Array<{ key: string; viewIndex: number; part: Part & { toolResponse: unknown } }> = [];
  view.forEach((message, viewIndex) => {
    const origin = resolved.origins[viewIndex]!;
    if (message.role !== 'tool' || origin < 0) return;
    history[origin]!.content.forEach((part, partIndex) => {
      if (!('toolResponse' in part)) return;
      const key = `${origin}:${partIndex}`;
      const record = recordOf(part);
      if (record) records.set(key, { ...record });
      toolParts.push({ key, viewIndex, part: part as Part & { toolResponse: unknown } });
    });
  });
  // Limits compare the estimate's size (inline media at its flat size); markers count raw characters.
  const rawChars = (part: Part) => ('toolResponse' in part ? toolResponseChars(part.toolResponse) : 0);
  const cap = options.maxToolResponseChars;
  const overCap = toolParts.filter(({ key, part }) => cap >= 0 && !records.has(key) && rawChars(part) > cap);
  if (!trigger && overCap.length === 0) return { history: [...history], view };

  const stats: CompressionStats = {
    triggered: true,
    inputTokensBefore: effective > 0 ? effective : estimate,
    messagesOriginal: view.length,
    messagesAfter: view.length,
    toolResponsesSafetyCapped: 0,
    toolResponsesDeduplicated: 0,
    toolResponsesTruncated: 0,
    truncationNoticeInserted: false,
    summarized: false,
    summarizationSkipped: false,
  };
  const ratio = options.maxInputTokens > 0 ? effective / options.maxInputTokens : 0;
  const shrink = (window: number) => (ratio >= 2 ? Math.min(window, 2) : ratio >= 1.5 ? Math.min(window, Math.max(2, Math.floor(window / 2))) : window);

  // Dedupe: all but the newest keepRecent responses of each group.
  const dedupe = options.deduplicateToolResponses;
  if (trigger && dedupe) {
    const groups = new Map<string, string[]>();
    const inputs = dedupe.matchBy === 'name-and-input' ? answeredInputs(view) : undefined;
    for (const entry of toolParts) {
      // A view message keeps its history message's parts in place, so the part index carries over.
      const partIndex = Number(entry.key.split(':')[1]);
      const response = (entry.part as { toolResponse: { name: string } }).toolResponse;
      let group = response.name;
      if (inputs) {
        const viewKey = `${entry.viewIndex}:${partIndex}`;
        if (!inputs.has(viewKey)) continue;
        group += `\u0000${JSON.stringify(inputs.get(viewKey) ?? null)}`;
      }
      groups.set(group, [...(groups.get(group) ?? []), entry.key]);
    }
    for (const keys of groups.values()) {
      for (const key of keys.slice(0, Math.max(0, keys.length - dedupe.keepRecent))) {
        // A truncated response is replaced too: the newer duplicate says it all.
        if (records.get(key)?.deduplicated) continue;
        records.set(key, { deduplicated: true, notice: dedupe.notice ?? DEDUPE_NOTICE, rawOutput: true });
        stats.toolResponsesDeduplicated++;
      }
    }
  }

  // Tool limits: on a trigger, the older tool messages cut to maxChars (or the cap when it is
  // stricter); then the safety cap on every other part over it.
  const limits = options.toolResponses;
  if (trigger && limits) {
    const toolViewIndexes = [...new Set(toolParts.map((entry) => entry.viewIndex))];
    const preserve = Math.max(0, limits.preserveRecent);
    const older = new Set(toolViewIndexes.slice(0, Math.max(0, toolViewIndexes.length - preserve)));
    const limit = cap >= 0 ? Math.min(cap, limits.maxChars) : limits.maxChars;
    for (const { key, viewIndex, part } of toolParts) {
      if (!older.has(viewIndex) || isEdited(records.get(key)) || rawChars(part) <= limit) continue;
      const binds = cap < 0 || limits.maxChars <= cap;
      const capped = records.get(key)?.capped ? { capped: true } : {};
      records.set(key, binds ? { truncated: true, ...capped, maxChars: limit, rawOutput: true } : { capped: true, maxChars: limit, rawOutput: true });
      if (binds) stats.toolResponsesTruncated++;
      else if (!recordOf(part)?.capped) stats.toolResponsesSafetyCapped++;
    }
  }
  for (const { key } of overCap) {
    if (records.has(key)) continue;
    records.set(key, { capped: true, maxChars: cap, rawOutput: true });
    stats.toolResponsesSafetyCapped++;
  }

  // The history with the tool edits recorded; the view after them.
  const edited = history.map((message, index) => {
    if (message.role !== 'tool') return message;
    let changed = false;
    const content = message.content.map((part, partIndex) => {
      const record = records.get(`${index}:${partIndex}`);
      if (!record || JSON.stringify(record) === JSON.stringify(recordOf(part))) return part;
      changed = true;
      return { ...part, metadata: { ...part.metadata, [COMPRESSION_KEY]: record } } as Part;
    });
    return changed ? { ...message, content } : message;
  });
  const { messages: cheapView, origins: cheapOrigins } = resolve(edited, trusted);
  const editsChanged = stats.toolResponsesDeduplicated + stats.toolResponsesTruncated > 0;
  const after = await measure(cheapView);
  const scaled = Math.max(after, estimate > 0 ? Math.ceil((effective * after) / estimate) : after);
  // The cheap steps brought the context under budget only when they changed something.
  const cheapUnderBudget = editsChanged && (options.maxInputTokens === 0 || scaled <= options.maxInputTokens);
  const finish = (result: Message[], stamped?: number): CompressionResult => {
    const out = resolve(result, (index) => index === stamped || (trusted?.(index) ?? false)).messages;
    stats.messagesAfter = out.length;
    const changed = stamped !== undefined || stats.toolResponsesDeduplicated + stats.toolResponsesTruncated + stats.toolResponsesSafetyCapped > 0;
    return { history: result, view: out, ...(changed ? { stats } : {}), ...(stamped !== undefined ? { stamped } : {}) };
  };
  if (!trigger) return finish(edited);

  const systems = leadingCount(cheapView);
  const stampBoundary = (firstKeptView: number, record: BoundaryRecord): CompressionResult | undefined => {
    // The boundary goes on the raw message just before the first kept one, never on a pinned one, never back.
    const firstOrigin = firstKeptView < cheapOrigins.length ? cheapOrigins[firstKeptView]! : edited.length;
    if (firstOrigin <= resolved.boundary) return undefined;
    let index = firstOrigin - 1;
    while (index > resolved.boundary && isPinned(edited[index]!)) index--;
    if (index < leadingCount(edited)) return undefined;
    const stampWith = (now: CompressionStats) =>
      edited.map((message, position) =>
        position === index
          ? {
              ...message,
              metadata: {
                ...message.metadata,
                [COMPRESSION_KEY]: { ...(message.metadata?.[COMPRESSION_KEY] as object | undefined), ...record, stats: { ...now } },
              },
            }
          : message,
      );
    // The stats recorded on the boundary count the view they describe.
    stats.messagesAfter = resolve(stampWith(stats), (position) => position === index || (trusted?.(position) ?? false)).messages.length;
    return finish(stampWith(stats), index);
  };

  // Summarize, unless the cheap steps were enough.
  const threshold = options.skipSummarizationThreshold;
  const savings = estimate > 0 ? 1 - after / estimate : 0;
  const skip = cheapUnderBudget && threshold > 0 && savings >= threshold;
  if (options.summarize && summarizer && skip) stats.summarizationSkipped = true;
  if (options.summarize && summarizer && !skip) {
    let keep = Math.max(1, shrink(options.summarize.preserveRecent));
    if (options.maxMessages > 0) keep = Math.min(keep, options.maxMessages - systems - 1 - pinnedCount(cheapView, systems));
    const body = cheapView.length - systems;
    if (keep >= body && overBudget) keep = Math.min(keep, Math.max(1, shrink(options.preserveRecent)));
    if (keep >= 1 && keep < body) {
      let split = cheapView.length - keep;
      while (split > systems && cheapView[split]!.role === 'tool') split--;
      // Lifted protected messages, the summary and the kept ones must fit maxMessages; otherwise dropping decides.
      const lifted = cheapView.slice(systems, split).filter(isPinned).length;
      const fits = options.maxMessages === 0 || systems + lifted + 1 + (cheapView.length - split) <= options.maxMessages;
      if (split > systems && fits) {
        const older = cheapView.slice(systems, split).filter((message) => !isPinned(message));
        const summary = older.length ? await summarizer(older) : undefined;
        if (summary !== undefined) {
          stats.summarized = true;
          const result = stampBoundary(split, { summary, stats: { ...stats } });
          if (result) return result;
        }
      }
    }
  }

  // Drop: the newest messages that fit, starting with a user message.
  // With a summarizer configured, only a skipped summary means the cheap steps were enough.
  const cheapSatisfied = options.summarize && summarizer ? stats.summarizationSkipped : cheapUnderBudget;
  const explicitCap =
    (options.preserveRecentSet && !cheapSatisfied) ||
    (overBudget && (!dedupe && !limits && !options.summarize ? true : Boolean(options.summarize) && !stats.summarizationSkipped));
  const noticeSlot = options.noTruncationNotice ? 0 : systems > 0 ? 0 : 1;
  const fixed = systems + noticeSlot;
  let slots: number;
  if (explicitCap) slots = shrink(options.preserveRecent);
  else if (options.maxMessages > 0) slots = ratio >= 1.5 ? shrink(Math.max(1, options.maxMessages - fixed)) : options.maxMessages - fixed;
  else return finish(edited);
  if (options.maxMessages > 0) slots = Math.min(slots, options.maxMessages - fixed);
  slots = Math.max(0, slots);
  // Nothing to drop while the view fits the slots.
  if (cheapView.length <= fixed + slots) return finish(edited);
  const pinned = pinnedCount(cheapView, systems);
  const keepFrom = (available: number): number => {
    // The newest `available` non-pinned messages (pinned ones in between stay and count).
    let start = cheapView.length;
    let room = available - pinned;
    while (start > systems && (isPinned(cheapView[start - 1]!) || room > 0)) {
      start--;
      if (!isPinned(cheapView[start]!)) room--;
    }
    while (start < cheapView.length && (cheapView[start]!.role === 'tool' || isPinned(cheapView[start]!))) start++;
    return start;
  };
  let start = keepFrom(slots);
  let anchorUser = false;
  let carriedSummary = '';
  if (slots > 0 && (start >= cheapView.length || cheapView[start]!.role !== 'user')) {
    const later = cheapView.findIndex((message, index) => index >= start && message.role === 'user' && !isPinned(message));
    if (later >= 0) start = later;
    else {
      // No user message left: the latest dropped one comes along as the anchor (it costs a
      // slot), unless a protected user message stands in for it.
      const latestUser = cheapView
        .slice(systems, start)
        .reverse()
        .find((message) => message.role === 'user' && !isSummaryMessage(message));
      if (!latestUser && cheapView.slice(systems, start).some(isSummaryMessage)) {
        // No user message at all: the previous summary is the last resort, carried onto the new boundary.
        carriedSummary = boundaryOf(history[resolved.boundary]!)?.summary ?? '';
      }
      if (latestUser && !isPinned(latestUser)) {
        anchorUser = true;
        if (slots > 1) {
          const fewer = keepFrom(slots - 1);
          if (fewer < cheapView.length) start = fewer;
        }
      }
      // The final [model, tool…] group stays even when the slots cannot reach it.
      let group = cheapView.length - 1;
      while (group > systems && cheapView[group]!.role === 'tool') group--;
      if (group < cheapView.length - 1 && cheapView[group]!.role === 'model') start = Math.min(start, group);
    }
  }
  if (start <= systems) return finish(edited);
  stats.truncationNoticeInserted = !options.noTruncationNotice;
  const record: BoundaryRecord = {
    summary: carriedSummary,
    stats: { ...stats },
    ...(anchorUser ? { anchorUser: true } : {}),
    ...(!options.noTruncationNotice && options.truncationNotice !== undefined ? { truncationNotice: options.truncationNotice } : {}),
  };
  return stampBoundary(start, record) ?? finish(edited);
}

/** The summary message a view shows for a boundary. */
const isSummaryMessage = (message: Message) => (message.metadata?.[COMPRESSION_KEY] as { summaryMessage?: unknown } | undefined)?.summaryMessage === true;

/** How many system messages lead a view. */
function leadingCount(view: readonly Message[]): number {
  let count = 0;
  while (count < view.length && view[count]!.role === 'system') count++;
  return count;
}

/** Pinned messages after the leading system messages. */
function pinnedCount(view: readonly Message[], systems: number): number {
  return view.slice(systems).filter(isPinned).length;
}

/** The summarizer's rendering of a conversation: one line per message. */
export function renderForSummary(messages: readonly Message[]): string {
  return messages
    .map((message) => {
      const parts = message.content.map((part) => {
        if ('text' in part) return part.metadata?.reasoning ? `[Reasoning: ${part.text}]` : part.text;
        if ('media' in part) return mediaDescriptor(part.media);
        if ('toolRequest' in part) return `[Tool call: ${part.toolRequest.name}(${JSON.stringify(part.toolRequest.input ?? null)})]`;
        if ('toolResponse' in part) {
          const { output, content } = part.toolResponse;
          const rendered = (content ?? []).map((item) => {
            if (typeof item.text === 'string' && item.text)
              return item.metadata && (item.metadata as { reasoning?: unknown }).reasoning ? `[Reasoning: ${item.text}]` : item.text;
            if (item.media) return mediaDescriptor(item.media as { url: string; contentType?: string });
            if (item.data !== undefined) return `[data: ${JSON.stringify(item.data)}]`;
            return '[other content]';
          });
          const texts = [output === undefined ? '' : outputText(output), rendered.join(' ')].filter(Boolean);
          return `[Tool response: ${part.toolResponse.name} → ${texts.join(' ')}]`;
        }
        return '[other content]';
      });
      return `${message.role}: ${parts.join(' ')}`;
    })
    .join('\n');
}

/** The reference's default summarizer prompt. */
export const DEFAULT_SUMMARY_PROMPT =
  'Summarize the following conversation concisely. Capture key facts, decisions made, tool calls and their results, and the current state of the conversation so that the assistant can continue helping the user effectively.\n\nConversation:\n{conversation}\n\nSummary:';

/** Summarizer input is capped at this many characters: the first 100000, then the tail. */
const SUMMARY_INPUT_CAP = 400_000;
const SUMMARY_INPUT_HEAD = 100_000;

/** The summarizer's prompt for messages. */
export function summaryPrompt(messages: readonly Message[], template = DEFAULT_SUMMARY_PROMPT): string {
  let render = renderForSummary(messages);
  const chars = [...render];
  if (chars.length > SUMMARY_INPUT_CAP) {
    const tail = SUMMARY_INPUT_CAP - SUMMARY_INPUT_HEAD;
    render = `${chars.slice(0, SUMMARY_INPUT_HEAD).join('')}\n...[${chars.length - SUMMARY_INPUT_CAP} chars of conversation omitted]...\n${chars.slice(chars.length - tail).join('')}`;
  }
  return template.includes('{conversation}') ? template.split('{conversation}').join(render) : `${template}\n\nConversation to summarize:\n${render}`;
}
