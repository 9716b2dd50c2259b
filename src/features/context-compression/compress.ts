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
  const noticeText = options.truncationNotice || DROP_NOTICE;
  const resolved = resolveReconciled(history, noticeText, trusted);
  const view = resolved.messages;
  const size = viewSize(await measure(view), tokens, view.length, options);
  const { records, toolParts } = recordedToolEdits(history, resolved);
  const cap = options.maxToolResponseChars;
  const overCap = toolParts.filter(({ key, part }) => cap >= 0 && !records.has(key) && rawChars(part) > cap);
  if (!size.trigger && overCap.length === 0) return { history: [...history], view };

  const stats = initialStats(size, view.length);
  const dedupe = options.deduplicateToolResponses;
  if (size.trigger && dedupe) deduplicate({ view, toolParts, records, dedupe, stats });
  const limits = options.toolResponses;
  if (size.trigger && limits) truncateOlder({ toolParts, records, limits, cap, stats });
  applySafetyCap({ overCap, records, cap, stats });

  const edited = withToolEdits(history, records);
  const { messages: cheapView, origins: cheapOrigins } = resolveReconciled(edited, noticeText, trusted);
  const after = await measure(cheapView);
  const decision: Decision = {
    history,
    options,
    trusted,
    summarizer,
    noticeText,
    boundary: resolved.boundary,
    size,
    stats,
    edited,
    cheapView,
    cheapOrigins,
    systems: leadingCount(cheapView),
    after,
    cheapUnderBudget: cheapStepsFit(size, after, stats, options),
  };
  if (!size.trigger) return finish(decision, edited);
  return (await summarizeOlder(decision)) ?? dropOlder(decision);
}

/** A tool response part of a view: its key ("history index:part index"), its view index and the part. */
interface ToolPart {
  key: string;
  viewIndex: number;
  part: Part & { toolResponse: unknown };
}

/** How big a view is against the budget. */
interface ViewSize {
  estimate: number;
  effective: number;
  overBudget: boolean;
  /** Over the token budget or over maxMessages: compression runs. */
  trigger: boolean;
  /** The effective count over the token budget (0 without one). */
  ratio: number;
}

/** One decision after the tool edits: what the summary and drop steps work from. */
interface Decision {
  history: readonly Message[];
  options: CompressionOptions;
  trusted: ((index: number) => boolean) | undefined;
  summarizer: Summarizer | undefined;
  noticeText: string;
  /** Index of the boundary the history's view starts after (-1: none). */
  boundary: number;
  size: ViewSize;
  /** Filled in as the steps run, and returned when anything changed. */
  stats: CompressionStats;
  /** The history with the tool edits recorded. */
  edited: Message[];
  /** The view of `edited`, and the history index each of its messages came from. */
  cheapView: Message[];
  cheapOrigins: number[];
  /** The system messages leading `cheapView`. */
  systems: number;
  /** The tokens of `cheapView`. */
  after: number;
  /** The cheap steps (deduplication, truncation) changed something and brought the context under budget. */
  cheapUnderBudget: boolean;
}

/** The view of messages, with any standalone notice a saved view carried folded into the system message. */
function resolveReconciled(messages: readonly Message[], noticeText: string, trust?: (index: number) => boolean): ResolvedView {
  const resolvedView = resolveView(messages, trust);
  const { messages: reconciled, sources } = reconcileNotices(resolvedView.messages, noticeText);
  return { messages: reconciled, origins: sources.map((source) => resolvedView.origins[source]!), boundary: resolvedView.boundary };
}

/**
 * The size of a view of `messages` messages whose estimate is `estimate`, given the count the
 * model reported (`tokens`). With a token budget the effective count is the larger of the two;
 * without one only a reported count is taken.
 */
function viewSize(estimate: number, tokens: number | undefined, messages: number, options: CompressionOptions): ViewSize {
  const effective = options.maxInputTokens > 0 ? Math.max(tokens ?? 0, estimate) : (tokens ?? 0);
  const overBudget = options.maxInputTokens > 0 && effective > options.maxInputTokens;
  const trigger = overBudget || (options.maxMessages > 0 && messages > options.maxMessages);
  const ratio = options.maxInputTokens > 0 ? effective / options.maxInputTokens : 0;
  return { estimate, effective, overBudget, trigger, ratio };
}

/**
 * The tool response parts of a view, and the tool edits already recorded on them (copies, keyed
 * "history index:part index"). Messages the view made itself (origin -1) have none.
 */
function recordedToolEdits(history: readonly Message[], resolved: ResolvedView): { records: Map<string, ToolEditRecord>; toolParts: ToolPart[] } {
  const records = new Map<string, ToolEditRecord>();
  const toolParts: ToolPart[] = [];
  resolved.messages.forEach((message, viewIndex) => {
    const origin = resolved.origins[viewIndex]!;
    if (message.role !== 'tool' || origin < 0) return;
    history[origin]!.content.forEach((part, partIndex) => {
      if (!('toolResponse' in part)) return;
      const key = `${origin}:${partIndex}`;
      const record = recordOf(part);
      if (record) records.set(key, { ...record });
      toolParts.push({ key, viewIndex, part });
    });
  });
  return { records, toolParts };
}

/** A part's size against the tool limits: the estimate's size (inline media at its flat size); markers count raw characters. */
const rawChars = (part: Part) => ('toolResponse' in part ? toolResponseChars(part.toolResponse) : 0);

/** The stats of a decision that runs, before any step: nothing done yet. */
function initialStats(size: ViewSize, messages: number): CompressionStats {
  return {
    triggered: true,
    inputTokensBefore: size.effective > 0 ? size.effective : size.estimate,
    messagesOriginal: messages,
    messagesAfter: messages,
    toolResponsesSafetyCapped: 0,
    toolResponsesDeduplicated: 0,
    toolResponsesTruncated: 0,
    truncationNoticeInserted: false,
    summarized: false,
    summarizationSkipped: false,
  };
}

/**
 * A window of messages shrunk by how far over budget the context is: at twice the budget or
 * more, at most 2; at 1.5 times or more, half of it (at least 2); otherwise as it is.
 */
function shrinkWindow(window: number, ratio: number): number {
  return ratio >= 2 ? Math.min(window, 2) : ratio >= 1.5 ? Math.min(window, Math.max(2, Math.floor(window / 2))) : window;
}

/**
 * The keys of the view's tool responses grouped as duplicates, oldest first: by tool name, and
 * with `name-and-input` also by the input of the request each answers (a response whose request
 * is not found joins no group).
 */
function duplicateGroups(view: readonly Message[], toolParts: readonly ToolPart[], matchBy: 'name-and-input' | 'name-only'): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  const inputs = matchBy === 'name-and-input' ? answeredInputs(view) : undefined;
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
  return groups;
}

/** Marks all but the newest `keepRecent` responses of each duplicate group as deduplicated (a truncated one too). */
function deduplicate({ view, toolParts, records, dedupe, stats }: DeduplicateInput): void {
  for (const keys of duplicateGroups(view, toolParts, dedupe.matchBy).values()) {
    for (const key of keys.slice(0, Math.max(0, keys.length - dedupe.keepRecent))) {
      // A truncated response is replaced too: the newer duplicate says it all.
      if (records.get(key)?.deduplicated) continue;
      records.set(key, { deduplicated: true, notice: dedupe.notice ?? DEDUPE_NOTICE, rawOutput: true });
      stats.toolResponsesDeduplicated++;
    }
  }
}

/** What `deduplicate` works on; it adds to `records` and `stats`. */
interface DeduplicateInput {
  view: readonly Message[];
  toolParts: readonly ToolPart[];
  records: Map<string, ToolEditRecord>;
  dedupe: NonNullable<CompressionOptions['deduplicateToolResponses']>;
  stats: CompressionStats;
}

/**
 * Cuts the responses of all but the newest `preserveRecent` tool messages that are over
 * `maxChars` (or over the safety cap when it is stricter; then the cut counts as a safety cap).
 * Responses already deduplicated or truncated stay as they are.
 */
function truncateOlder({ toolParts, records, limits, cap, stats }: TruncateOlderInput): void {
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

/** What `truncateOlder` works on; it adds to `records` and `stats`. */
interface TruncateOlderInput {
  toolParts: readonly ToolPart[];
  records: Map<string, ToolEditRecord>;
  limits: NonNullable<CompressionOptions['toolResponses']>;
  /** The safety cap (negative: none). */
  cap: number;
  stats: CompressionStats;
}

/** Caps every part over the safety cap that no other step edited. */
function applySafetyCap({ overCap, records, cap, stats }: SafetyCapInput): void {
  for (const { key } of overCap) {
    if (records.has(key)) continue;
    records.set(key, { capped: true, maxChars: cap, rawOutput: true });
    stats.toolResponsesSafetyCapped++;
  }
}

/** What `applySafetyCap` works on; it adds to `records` and `stats`. */
interface SafetyCapInput {
  /** The parts over the cap that had no recorded edit when the decision started. */
  overCap: readonly ToolPart[];
  records: Map<string, ToolEditRecord>;
  cap: number;
  stats: CompressionStats;
}

/** The history with the tool edits recorded on their parts; unchanged messages stay the same objects. */
function withToolEdits(history: readonly Message[], records: ReadonlyMap<string, ToolEditRecord>): Message[] {
  return history.map((message, index) => {
    if (message.role !== 'tool') return message;
    let changed = false;
    const content = message.content.map((part, partIndex) => {
      const record = records.get(`${index}:${partIndex}`);
      if (!record || JSON.stringify(record) === JSON.stringify(recordOf(part))) return part;
      changed = true;
      return { ...part, metadata: { ...part.metadata, [COMPRESSION_KEY]: record } };
    });
    return changed ? { ...message, content } : message;
  });
}

/**
 * Whether the cheap steps brought the context under budget: only when they changed something,
 * and then with the tokens after them scaled as the effective count was to the estimate.
 */
function cheapStepsFit(size: ViewSize, after: number, stats: CompressionStats, options: CompressionOptions): boolean {
  const editsChanged = stats.toolResponsesDeduplicated + stats.toolResponsesTruncated > 0;
  const scaled = Math.max(after, size.estimate > 0 ? Math.ceil((size.effective * after) / size.estimate) : after);
  return editsChanged && (options.maxInputTokens === 0 || scaled <= options.maxInputTokens);
}

/**
 * The result for history `result` (with the boundary at `stamped`, if this decision stamped
 * one): its view, and the stats when anything changed.
 */
function finish(decision: Decision, result: Message[], stamped?: number): CompressionResult {
  const { noticeText, trusted, stats } = decision;
  const out = resolveReconciled(result, noticeText, (index) => index === stamped || (trusted?.(index) ?? false)).messages;
  stats.messagesAfter = out.length;
  const changed = stamped !== undefined || stats.toolResponsesDeduplicated + stats.toolResponsesTruncated + stats.toolResponsesSafetyCapped > 0;
  return { history: result, view: out, ...(changed ? { stats } : {}), ...(stamped !== undefined ? { stamped } : {}) };
}

/**
 * Stamps a boundary so that the view keeps the messages from view index `firstKeptView` on. The
 * boundary goes on the history message just before the first kept one, stepping back over pinned
 * ones; never at or before the current boundary, never on a leading system message (undefined then).
 */
function stampBoundary(decision: Decision, firstKeptView: number, record: BoundaryRecord): CompressionResult | undefined {
  const { edited, cheapOrigins, boundary, stats, trusted, noticeText } = decision;
  const firstOrigin = firstKeptView < cheapOrigins.length ? cheapOrigins[firstKeptView]! : edited.length;
  if (firstOrigin <= boundary) return undefined;
  let index = firstOrigin - 1;
  while (index > boundary && isPinned(edited[index]!)) index--;
  if (index < leadingCount(edited)) return undefined;
  // The stats recorded on the boundary count the view they describe.
  const trust = (position: number) => position === index || (trusted?.(position) ?? false);
  stats.messagesAfter = resolveReconciled(withBoundary(edited, index, record, stats), noticeText, trust).messages.length;
  return finish(decision, withBoundary(edited, index, record, stats), index);
}

/** The messages with `record` (and a copy of `stats`) added to the compression metadata of message `index`. */
function withBoundary(messages: readonly Message[], index: number, record: BoundaryRecord, stats: CompressionStats): Message[] {
  return messages.map((message, position) =>
    position === index
      ? {
          ...message,
          metadata: {
            ...message.metadata,
            [COMPRESSION_KEY]: { ...(message.metadata?.[COMPRESSION_KEY] as object | undefined), ...record, stats: { ...stats } },
          },
        }
      : message,
  );
}

/**
 * Summarizes the older messages behind a new boundary, when a summarizer is configured and the
 * cheap steps were not enough (they fit and saved at least skipSummarizationThreshold: the
 * summary is skipped and recorded so). Undefined when there is no summary; dropping decides then.
 */
async function summarizeOlder(decision: Decision): Promise<CompressionResult | undefined> {
  const { options, summarizer, stats, size, cheapView, systems } = decision;
  if (!options.summarize || !summarizer) return undefined;
  const threshold = options.skipSummarizationThreshold;
  const savings = size.estimate > 0 ? 1 - decision.after / size.estimate : 0;
  if (decision.cheapUnderBudget && threshold > 0 && savings >= threshold) {
    stats.summarizationSkipped = true;
    return undefined;
  }
  const split = summarySplit(decision, options.summarize.preserveRecent);
  if (split === undefined) return undefined;
  const older = cheapView.slice(systems, split).filter((message) => !isPinned(message));
  const summary = older.length ? await summarizer(older) : undefined;
  if (summary === undefined) return undefined;
  stats.summarized = true;
  return stampBoundary(decision, split, { summary, stats: { ...stats } });
}

/**
 * Where the summarized part of the view ends: the newest `preserveRecent` messages stay (shrunk
 * when far over budget, fewer when maxMessages asks; never starting on a tool message). Undefined
 * when nothing would be summarized, or the lifted protected messages, the summary and the kept
 * ones would not fit maxMessages.
 */
function summarySplit({ options, size, cheapView, systems }: Decision, preserveRecent: number): number | undefined {
  let keep = Math.max(1, shrinkWindow(preserveRecent, size.ratio));
  if (options.maxMessages > 0) keep = Math.min(keep, options.maxMessages - systems - 1 - pinnedCount(cheapView, systems));
  const body = cheapView.length - systems;
  if (keep >= body && size.overBudget) keep = Math.min(keep, Math.max(1, shrinkWindow(options.preserveRecent, size.ratio)));
  if (!(keep >= 1 && keep < body)) return undefined;
  let split = cheapView.length - keep;
  while (split > systems && cheapView[split]!.role === 'tool') split--;
  const lifted = cheapView.slice(systems, split).filter(isPinned).length;
  const fits = options.maxMessages === 0 || systems + lifted + 1 + (cheapView.length - split) <= options.maxMessages;
  return split > systems && fits ? split : undefined;
}

/** Drops the older messages behind a new boundary: the newest messages that fit, starting with a user message. */
function dropOlder(decision: Decision): CompressionResult {
  const { options, stats, systems, edited } = decision;
  const slots = dropSlots(decision);
  if (slots === undefined) return finish(decision, edited);
  const { start, anchorUser, carriedSummary } = dropStart(decision, slots);
  if (start <= systems) return finish(decision, edited);
  stats.truncationNoticeInserted = !options.noTruncationNotice;
  const record: BoundaryRecord = {
    summary: carriedSummary,
    stats: { ...stats },
    ...(anchorUser ? { anchorUser: true } : {}),
    ...(!options.noTruncationNotice && options.truncationNotice !== undefined ? { truncationNotice: options.truncationNotice } : {}),
  };
  return stampBoundary(decision, start, record) ?? finish(decision, edited);
}

/**
 * How many messages dropping keeps besides the system messages and the notice: preserveRecent
 * (shrunk when far over budget) when it binds, otherwise what maxMessages leaves; never more than
 * maxMessages leaves. Undefined when nothing is to be dropped.
 */
function dropSlots({ options, summarizer, stats, size, systems, cheapView, cheapUnderBudget }: Decision): number | undefined {
  // With a summarizer configured, only a skipped summary means the cheap steps were enough.
  const cheapSatisfied = options.summarize && summarizer ? stats.summarizationSkipped : cheapUnderBudget;
  const explicitCap =
    (options.preserveRecentSet && !cheapSatisfied) ||
    (size.overBudget &&
      (!options.deduplicateToolResponses && !options.toolResponses && !options.summarize ? true : Boolean(options.summarize) && !stats.summarizationSkipped));
  const noticeSlot = options.noTruncationNotice ? 0 : systems > 0 ? 0 : 1;
  const fixed = systems + noticeSlot;
  let slots: number;
  if (explicitCap) slots = shrinkWindow(options.preserveRecent, size.ratio);
  else if (options.maxMessages > 0)
    slots = size.ratio >= 1.5 ? shrinkWindow(Math.max(1, options.maxMessages - fixed), size.ratio) : options.maxMessages - fixed;
  else return undefined;
  if (options.maxMessages > 0) slots = Math.min(slots, options.maxMessages - fixed);
  slots = Math.max(0, slots);
  // Nothing to drop while the view fits the slots.
  return cheapView.length <= fixed + slots ? undefined : slots;
}

/** Where the kept messages start after a drop, and what the boundary carries for it. */
interface DropStart {
  start: number;
  anchorUser: boolean;
  carriedSummary: string;
}

/**
 * Where the kept messages start when dropping to `slots`: the newest that fit, moved on to a
 * user message; without one among them, the first later user message, or else an anchor.
 */
function dropStart(decision: Decision, slots: number): DropStart {
  const { cheapView, systems } = decision;
  const pinned = pinnedCount(cheapView, systems);
  let start = keepFrom(cheapView, systems, pinned, slots);
  if (slots > 0 && (start >= cheapView.length || cheapView[start]!.role !== 'user')) {
    const later = cheapView.findIndex((message, index) => index >= start && message.role === 'user' && !isPinned(message));
    if (later >= 0) start = later;
    else return anchoredStart(decision, slots, start, pinned);
  }
  return { start, anchorUser: false, carriedSummary: '' };
}

/**
 * The view index the newest `available` non-pinned messages start at (pinned ones in between stay
 * and count), moved past tool and pinned messages.
 */
function keepFrom(cheapView: readonly Message[], systems: number, pinned: number, available: number): number {
  let start = cheapView.length;
  let room = available - pinned;
  while (start > systems && (isPinned(cheapView[start - 1]!) || room > 0)) {
    start--;
    if (!isPinned(cheapView[start]!)) room--;
  }
  while (start < cheapView.length && (cheapView[start]!.role === 'tool' || isPinned(cheapView[start]!))) start++;
  return start;
}

/**
 * The drop's start when no user message is left among the kept ones: the latest dropped user
 * message comes along as the anchor (it costs a slot) unless it is protected; with no user message
 * at all, the previous summary is carried onto the new boundary. The final [model, tool…] group
 * stays even when the slots cannot reach it.
 */
function anchoredStart(decision: Decision, slots: number, start: number, pinned: number): DropStart {
  const { cheapView, systems, history, boundary } = decision;
  let anchorUser = false;
  let carriedSummary = '';
  const latestUser = cheapView
    .slice(systems, start)
    .reverse()
    .find((message) => message.role === 'user' && !isSummaryMessage(message));
  if (!latestUser && cheapView.slice(systems, start).some(isSummaryMessage)) {
    carriedSummary = boundaryOf(history[boundary]!)?.summary ?? '';
  }
  if (latestUser && !isPinned(latestUser)) {
    anchorUser = true;
    if (slots > 1) {
      const fewer = keepFrom(cheapView, systems, pinned, slots - 1);
      if (fewer < cheapView.length) start = fewer;
    }
  }
  let group = cheapView.length - 1;
  while (group > systems && cheapView[group]!.role === 'tool') group--;
  if (group < cheapView.length - 1 && cheapView[group]!.role === 'model') start = Math.min(start, group);
  return { start, anchorUser, carriedSummary };
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
