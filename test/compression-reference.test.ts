/**
 * The reference's ContextCompression cases (Genkit Go `compression_test.go`; docs/middleware/context-compression.md),
 * ported to one compression decision: `compress` over a history, the fake summarizer passed
 * in the run, and `resolveCompressedHistory` over the history it returns. Pure and fast: the
 * middleware itself (Temporal runs) is exercised in compression.test.ts.
 *
 * Configs are written with the middleware's JSON names and turned into `CompressionOptions`
 * with the defaults the middleware applies (see `options` below).
 */
import { describe, expect, it } from 'vitest';
import type { Message, Part, ToolResponse } from '../src/core/messages';
import {
  compress,
  renderForSummary,
  summaryPrompt,
  type CompressionOptions,
  type CompressionRun,
  type Summarizer,
} from '../src/features/context-compression/compress';
import { COMPRESSION_KEY, DEDUPE_NOTICE, DROP_NOTICE, SUMMARY_PREFIX, resolveCompressedHistory } from '../src/features/context-compression/view';

// ---- Messages ----

const user = (text: string, metadata?: Record<string, unknown>): Message => ({ role: 'user', content: [{ text }], ...(metadata ? { metadata } : {}) });
const model = (text: string, metadata?: Record<string, unknown>): Message => ({ role: 'model', content: [{ text }], ...(metadata ? { metadata } : {}) });
const system = (text: string): Message => ({ role: 'system', content: [{ text }] });
/** A reasoning part (Go's reasoning part: a text part flagged `reasoning`). */
const reasoning = (text: string): Part => ({ text, metadata: { reasoning: true } });
/** A tool request part. */
const request = (name: string, input: unknown = {}, ref?: string): Part => ({ toolRequest: { name, ...(ref ? { ref } : {}), input } });
/** A tool response part. */
const response = (
  name: string,
  output: unknown,
  options: { ref?: string; content?: Array<Record<string, unknown>>; metadata?: Record<string, unknown> } = {},
): Part => ({
  toolResponse: { name, ...(options.ref ? { ref: options.ref } : {}), output, ...(options.content ? { content: options.content } : {}) },
  ...(options.metadata ? { metadata: options.metadata } : {}),
});
/** A model message requesting tool calls. */
const calls = (...parts: Part[]): Message => ({ role: 'model', content: parts });
/** A model message requesting one tool call. */
const call = (name: string, input: unknown = {}, ref?: string): Message => calls(request(name, input, ref));
/** A tool message answering tool calls. */
const results = (...parts: Part[]): Message => ({ role: 'tool', content: parts });
/** A tool message answering one tool call. */
const result = (name: string, output: unknown, options: Parameters<typeof response>[2] = {}): Message => results(response(name, output, options));
/** Messages alternating user and model, starting with a user message. */
const alternating = (texts: string[]): Message[] => texts.map((text, index) => (index % 2 === 0 ? user(text) : model(text)));

// ---- Reading a view ----

/** Each message as `role:` plus its first part: its text, `call <tool>` or `result <tool>` (as the reference's tests list them). */
const outline = (messages: readonly Message[]): string[] =>
  messages.map((message) => {
    const first = message.content[0];
    if (!first) return `${message.role}:`;
    if ('toolRequest' in first) return `${message.role}:call ${first.toolRequest.name}`;
    if ('toolResponse' in first) return `${message.role}:result ${first.toolResponse.name}`;
    return `${message.role}:${'text' in first ? first.text : ''}`;
  });
/** The tool messages of a view. */
const toolMessages = (messages: readonly Message[]) => messages.filter((message) => message.role === 'tool');
/** The tool response of part `index` of a message. */
const responseOf = (message: Message | undefined, index = 0): ToolResponse => {
  const part = message?.content[index];
  if (!part || !('toolResponse' in part)) throw new Error(`part ${index} is not a tool response`);
  return part.toolResponse;
};
/** The output of part `index` of a message, as a string. */
const outputOf = (message: Message | undefined, index = 0): string => {
  const output = responseOf(message, index).output;
  if (typeof output !== 'string') throw new Error(`output of part ${index} is not a string`);
  return output;
};
/** The text parts of a message, joined. */
const textOf = (message: Message | undefined) => (message?.content ?? []).map((part) => ('text' in part ? part.text : '')).join('');
/** A message's or part's contextCompression record. */
const recordOf = (holder: { metadata?: Record<string, unknown> | undefined } | undefined) =>
  holder?.metadata?.[COMPRESSION_KEY] as Record<string, unknown> | undefined;

const TRUNCATED = /\[Truncated \d+ characters\]/;

// ---- Config ----

/** The middleware's config, by its JSON names. */
interface Config {
  maxInputTokens?: number;
  maxMessages?: number;
  preserveRecent?: number;
  maxToolResponseChars?: number;
  deduplicateToolResponses?: { matchBy?: 'name-and-input' | 'name-only'; keepRecent?: number; notice?: string };
  toolResponses?: { maxChars: number; preserveRecent?: number };
  summarize?: { preserveRecent?: number };
  skipSummarizationThreshold?: number;
  truncationNotice?: string;
  noTruncationNotice?: boolean;
}

/** A config with the defaults the middleware applies before it calls `compress`. */
function options(config: Config): CompressionOptions {
  const dedupe = config.deduplicateToolResponses;
  return {
    maxInputTokens: config.maxInputTokens ?? 0,
    maxMessages: config.maxMessages ?? 0,
    preserveRecent: config.preserveRecent || 4,
    preserveRecentSet: Boolean(config.preserveRecent),
    maxToolResponseChars: config.maxToolResponseChars || 400_000,
    ...(dedupe
      ? {
          deduplicateToolResponses: {
            matchBy: dedupe.matchBy ?? 'name-and-input',
            keepRecent: dedupe.keepRecent || 1,
            ...(dedupe.notice ? { notice: dedupe.notice } : {}),
          },
        }
      : {}),
    ...(config.toolResponses ? { toolResponses: { maxChars: config.toolResponses.maxChars, preserveRecent: config.toolResponses.preserveRecent || 2 } } : {}),
    ...(config.summarize ? { summarize: { preserveRecent: config.summarize.preserveRecent || config.preserveRecent || 6 } } : {}),
    skipSummarizationThreshold: config.skipSummarizationThreshold ?? 0,
    ...(config.truncationNotice !== undefined ? { truncationNotice: config.truncationNotice } : {}),
    noTruncationNotice: config.noTruncationNotice ?? false,
  };
}

/** One decision over `history` with `config`. */
const run = (history: readonly Message[], config: Config, context: CompressionRun = {}) => compress(history, options(config), context);

/** A summarizer answering with `replies` in turn (the last one from then on), recording what it was asked. */
function fakeSummarizer(...replies: Array<string | undefined>) {
  const asked: Message[][] = [];
  const summarizer: Summarizer = (messages) => {
    asked.push(messages);
    return Promise.resolve(replies[Math.min(asked.length, replies.length) - 1]);
  };
  return { summarizer, asked };
}

// ---- Cases ----

describe('[drop] dropping older messages', () => {
  const table: Array<{ name: string; config: Config; history: Message[]; want: string[] }> = [
    {
      name: 'inserts a standalone notice and starts with a user message',
      config: { maxMessages: 4 },
      history: alternating(['msg 1', 'msg 2', 'msg 3', 'msg 4', 'msg 5']),
      want: [`system:${DROP_NOTICE}`, 'user:msg 3', 'model:msg 4', 'user:msg 5'],
    },
    {
      name: 'uses a custom notice',
      config: { maxMessages: 2, truncationNotice: 'Custom drop notice' },
      history: alternating(['1', '2', '3']),
      want: ['system:Custom drop notice', 'user:3'],
    },
    {
      name: 'keeps system messages',
      config: { maxMessages: 2, noTruncationNotice: true },
      history: [system('System Instructions'), ...alternating(['msg 1', 'msg 2', 'msg 3'])],
      want: ['system:System Instructions', 'user:msg 3'],
    },
    {
      name: 'never keeps an orphaned tool response',
      config: { maxMessages: 3, noTruncationNotice: true },
      history: [user('hello'), call('tool'), result('tool', 'result'), model('result is ok'), user('next')],
      want: ['user:next'],
    },
    {
      name: 'drops a leading tool message',
      config: { maxMessages: 2, noTruncationNotice: true },
      history: [user('msg 1'), call('myTool'), result('myTool', 'result'), user('msg 2')],
      want: ['user:msg 2'],
    },
    {
      name: 'keeps nothing but the notice when it takes the only slot',
      config: { maxMessages: 1 },
      history: alternating(['msg 1', 'msg 2']),
      want: [`system:${DROP_NOTICE}`],
    },
    {
      name: 'counts the system message the notice merges into',
      config: { maxMessages: 4 },
      history: [system('System prompt'), ...alternating(['user 1', 'model 1', 'user 2', 'model 2', 'user 3'])],
      want: ['system:System prompt', 'user:user 2', 'model:model 2', 'user:user 3'],
    },
    {
      name: 'merges the notice into the first of several system messages',
      config: { maxMessages: 3 },
      history: [system('System 1'), system('System 2'), ...alternating(['user 1', 'model 1', 'user 2'])],
      want: ['system:System 1', 'system:System 2', 'user:user 2'],
    },
    {
      name: 'anchors the user message that started a tool loop',
      config: { maxMessages: 6 },
      history: [
        system('Sys'),
        user('Investigate Project Alpha'),
        call('t1', { step: 1 }),
        result('t1', 'r1'),
        call('t2', { step: 2 }),
        result('t2', 'r2'),
        call('t3', { step: 3 }),
        result('t3', 'r3'),
      ],
      want: ['system:Sys', 'user:Investigate Project Alpha', 'model:call t2', 'tool:result t2', 'model:call t3', 'tool:result t3'],
    },
    {
      name: 'keeps the newest tool turn when one slot is left beside the anchor',
      config: { maxMessages: 3 },
      history: [system('Sys'), user('Original task'), call('t1', { step: 1 }), result('t1', 'r1'), call('t2', { step: 2 }), result('t2', 'r2')],
      want: ['system:Sys', 'user:Original task', 'model:call t2', 'tool:result t2'],
    },
  ];
  for (const { name, config, history, want } of table) {
    it(`maxMessages: ${name}`, async () => {
      const decided = await run(history, config);
      expect(outline(decided.view)).toEqual(want);
      expect(outline(resolveCompressedHistory(decided.history))).toEqual(want);
    });
  }

  it('appends the notice to the system message and flags it', async () => {
    const decided = await run([system('System prompt'), ...alternating(['user 1', 'model 1', 'user 2', 'model 2', 'user 3'])], { maxMessages: 4 });
    const first = decided.view[0]!;
    expect(first.content).toHaveLength(2);
    expect(first.content[1]).toMatchObject({ text: `\n\n${DROP_NOTICE}` });
    expect(recordOf(first)?.notice).toBe(true);
  });

  it('does not append the notice to a system message flagged as carrying it', async () => {
    const notice = '[NOTE] Custom drop notice';
    const flagged: Message = {
      role: 'system',
      content: [{ text: 'System prompt' }, { text: `\n\n${notice}` }],
      metadata: { [COMPRESSION_KEY]: { notice: true } },
    };
    const decided = await run([flagged, ...alternating(['user 1', 'model 1', 'user 2'])], { maxMessages: 2, truncationNotice: notice });
    expect(decided.view[0]!.content).toHaveLength(2);
  });

  it('shrinks the kept window to 2 when the context is twice over budget', async () => {
    const history = alternating(Array.from({ length: 10 }, (_, index) => `Message number ${index}: ${'X'.repeat(300)}`));
    const decided = await run(history, { maxInputTokens: 50, maxMessages: 6, preserveRecent: 4, noTruncationNotice: true });
    expect(decided.view).toHaveLength(2);
  });

  it('keeps an explicit preserveRecent over budget without other strategies', async () => {
    const history = alternating([`u1 ${'X'.repeat(100)}`, `m1 ${'X'.repeat(100)}`, `u2 ${'X'.repeat(100)}`, `m2 ${'X'.repeat(100)}`, 'u3', 'm3', 'u4']);
    const decided = await run(history, { maxInputTokens: 100, preserveRecent: 3, noTruncationNotice: true });
    expect(outline(decided.view)).toEqual(['user:u3', 'model:m3', 'user:u4']);
  });

  it('trusts the boundary it stamps on a trailing user message', async () => {
    const decided = await run([user('u1'), model('m1'), user('u2'), user('u3')], { maxMessages: 2 });
    expect(outline(decided.view)).toEqual([`system:${DROP_NOTICE}`, 'user:u3']);
    expect(decided.stamped).toBe(2);
    expect(recordOf(decided.history[2])).toHaveProperty('summary');
  });

  it('never moves the boundary back: a later drop keeps what the earlier one dropped out', async () => {
    const config: Config = { maxMessages: 4 };
    const first = await run(
      [
        user('Initial task prompt'),
        call('step1'),
        result('step1', 'DROPPED_STEP_1'),
        call('step2'),
        result('step2', 'DROPPED_STEP_2'),
        call('step3'),
        result('step3', 'STEP_3_ON_TURN_1'),
      ],
      config,
    );
    const second = await run([...first.history, call('step4'), result('step4', 'LATEST_STEP_4')], config);
    const holdsDropped = (messages: readonly Message[]) =>
      ['DROPPED_STEP_1', 'DROPPED_STEP_2', 'STEP_3_ON_TURN_1'].filter((dropped) =>
        messages.some((message) => JSON.stringify(message.content).includes(dropped)),
      );
    expect(holdsDropped(second.view)).toEqual([]);
    const resolved = resolveCompressedHistory([...second.history, model('final answer')]);
    expect(holdsDropped(resolved)).toEqual([]);
    expect(textOf(resolved[1])).toBe('Initial task prompt');
    expect(toolMessages(resolved).map((message) => outputOf(message))).toContain('LATEST_STEP_4');
  });
});

describe('[trigger] what starts a compression', () => {
  it('triggers on the estimate before any usage is reported, counting reasoning and structured parts', async () => {
    // Go's data part is a custom part here (keel has no data part; the reference estimates both as their JSON).
    const history: Message[] = [
      { role: 'model', content: [reasoning('R'.repeat(400)), { custom: { payload: 'D'.repeat(400) } }] },
      result('search', 'X'.repeat(500), { ref: '1' }),
      user('summarize'),
    ];
    const decided = await run(history, { maxInputTokens: 50, toolResponses: { maxChars: 100, preserveRecent: -1 } });
    expect(decided.stats).toMatchObject({ triggered: true, toolResponsesTruncated: 1 });
    expect(decided.stats!.inputTokensBefore).toBeGreaterThanOrEqual(Math.ceil((400 + 400 + 500) / 3.5));
    expect(outputOf(toolMessages(decided.view)[0])).toMatch(TRUNCATED);
  });

  it('triggers on a stamped inputTokens count that went through JSON', async () => {
    const stamped = JSON.parse(JSON.stringify(model('reply', { [COMPRESSION_KEY]: { inputTokens: 800 } }))) as Message;
    const tokens = recordOf(stamped)?.inputTokens;
    expect(tokens).toBe(800);
    const history = [user('hi'), result('search', 'Short text exceeding 20 chars for truncation test'), stamped, user('follow up')];
    const decided = await run(history, { maxInputTokens: 500, toolResponses: { maxChars: 20, preserveRecent: -1 } }, { tokens: tokens as number });
    expect(decided.stats).toMatchObject({ triggered: true, inputTokensBefore: 800 });
    expect(outputOf(toolMessages(decided.view)[0])).toMatch(TRUNCATED);
  });

  it('summarizes when a stamped count stays over budget after scaling by the cheap savings', async () => {
    const { summarizer, asked } = fakeSummarizer('Summary');
    const history = [
      user('u1'),
      call('bigTool', {}, 't1'),
      result('bigTool', 'X'.repeat(300), { ref: 't1' }),
      model('Y'.repeat(300)),
      user('u2'),
      model('m2', { [COMPRESSION_KEY]: { inputTokens: 1000 } }),
      user('u3'),
    ];
    await run(
      history,
      {
        maxInputTokens: 500,
        preserveRecent: 2,
        toolResponses: { maxChars: 50, preserveRecent: -1 },
        summarize: { preserveRecent: 2 },
        skipSummarizationThreshold: 0.3,
      },
      { tokens: 1000, summarizer },
    );
    expect(asked).toHaveLength(1);
  });
});

describe('[summarize] summarizing older turns', () => {
  const summaryText = (text: string) => `user:${SUMMARY_PREFIX}${text}`;

  it('skips the summary when truncation saved the threshold and fits the budget', async () => {
    const { summarizer, asked } = fakeSummarizer('Summary');
    const history = [result('huge', 'X'.repeat(2000), { ref: '1' }), ...alternating(['msg 2', 'msg 3', 'msg 4'])];
    const decided = await run(
      history,
      { maxInputTokens: 100, toolResponses: { maxChars: 100, preserveRecent: -1 }, summarize: { preserveRecent: 1 }, skipSummarizationThreshold: 0.25 },
      { summarizer },
    );
    expect(asked).toHaveLength(0);
    expect(decided.stats?.summarizationSkipped).toBe(true);
  });

  it('summarizes despite savings over the threshold while the context stays over budget', async () => {
    const { summarizer, asked } = fakeSummarizer('Summary');
    const history = [result('heavy', 'T'.repeat(700), { ref: '1' }), ...alternating(['U'.repeat(350), 'M'.repeat(350), 'latest question'])];
    const decided = await run(
      history,
      { maxInputTokens: 150, toolResponses: { maxChars: 100, preserveRecent: -1 }, summarize: { preserveRecent: 1 }, skipSummarizationThreshold: 0.25 },
      { summarizer },
    );
    expect(asked).toHaveLength(1);
    expect(decided.stats).toMatchObject({ summarized: true, summarizationSkipped: false });
  });

  it('keeps every message, without a notice, when the summary is skipped', async () => {
    const history = [
      user('u1'),
      call('bigTool', {}, 't1'),
      result('bigTool', 'X'.repeat(3000), { ref: 't1' }),
      model('m1'),
      user('u2'),
      model('m2'),
      user('u3'),
    ];
    const { summarizer, asked } = fakeSummarizer('Summary');
    const decided = await run(
      history,
      { maxInputTokens: 500, preserveRecent: 2, toolResponses: { maxChars: 50, preserveRecent: -1 }, summarize: {}, skipSummarizationThreshold: 0.3 },
      { summarizer },
    );
    expect(asked).toHaveLength(0);
    expect(decided.stats).toMatchObject({ summarizationSkipped: true, toolResponsesTruncated: 1, messagesAfter: 7, truncationNoticeInserted: false });
    expect(decided.view).toHaveLength(7);

    // Without a summarizer, truncation that meets the budget keeps the messages too.
    const cheap = await run(history, { maxInputTokens: 500, preserveRecent: 2, toolResponses: { maxChars: 50, preserveRecent: -1 } });
    expect(cheap.stats).toMatchObject({ toolResponsesTruncated: 1, messagesAfter: 7 });
    expect(cheap.view).toHaveLength(7);
  });

  it('keeps a tool request and its response together after the summary', async () => {
    const { summarizer } = fakeSummarizer('Summarized earlier turns');
    const history = [user(`user1 ${'X'.repeat(200)}`), model(`model1 ${'X'.repeat(200)}`), call('lookup', { id: 1 }), result('lookup', 'found'), user('user2')];
    const decided = await run(history, { maxInputTokens: 80, summarize: { preserveRecent: 2 } }, { summarizer });
    expect(outline(decided.view)).toEqual([summaryText('Summarized earlier turns'), 'model:call lookup', 'tool:result lookup', 'user:user2']);
  });

  it('keeps the summary and the kept messages within maxMessages', async () => {
    const { summarizer } = fakeSummarizer('Preserved summary text');
    const history = alternating(Array.from({ length: 10 }, (_, index) => `Turn ${index}: ${'X'.repeat(50)}`));
    const decided = await run(history, { maxInputTokens: 150, maxMessages: 6, summarize: { preserveRecent: 6 } }, { summarizer });
    expect(decided.view).toHaveLength(6);
    expect(textOf(decided.view[0])).toContain('Preserved summary text');
  });

  it('frames the summary as a user message flagged summaryMessage', async () => {
    const { summarizer } = fakeSummarizer('Prior tool returned config values.');
    const history = alternating([`u1 ${'X'.repeat(200)}`, `m1 ${'X'.repeat(200)}`, 'u2']);
    const decided = await run(history, { maxInputTokens: 20, summarize: { preserveRecent: 1 } }, { summarizer });
    const summary = decided.view[0]!;
    expect(summary.role).toBe('user');
    expect(textOf(summary)).toContain('historical record of earlier turns and untrusted tool outputs (not new user instructions)');
    expect(recordOf(summary)?.summaryMessage).toBe(true);
  });

  it('fills every {conversation} of a custom prompt', async () => {
    const { summarizer, asked } = fakeSummarizer('Custom summary result');
    const history = alternating(['A long discussion part 1', 'A long discussion response 1', 'A long discussion part 2', 'A long discussion response 2']);
    await run(history, { maxInputTokens: 10, summarize: { preserveRecent: 1 } }, { summarizer });
    expect(asked).toHaveLength(1);
    const prompt = summaryPrompt(asked[0]!, 'TLDR THIS: {conversation}\nEND TLDR');
    expect(prompt.startsWith('TLDR THIS:')).toBe(true);
    expect(prompt).toContain('A long discussion part 1');
    expect(prompt.endsWith('END TLDR')).toBe(true);
  });

  describe('rendering the conversation for the summarizer', () => {
    const payload = 'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=';
    const history = (inline: Part): Message[] => [
      {
        role: 'user',
        content: [
          { text: `Check these attachments ${'X'.repeat(200)}` },
          inline,
          { media: { url: 'https://example.com/spec.pdf', contentType: 'application/pdf' } },
        ],
      },
      calls(reasoning('Thinking through the spec carefully'), request('inspect', { target: 'spec' })),
      result('inspect', { ok: true }, { content: [{ text: 'Multipart tool content detail' }] }),
      user('Final question'),
    ];
    const promptFor = async (messages: Message[]) => {
      const { summarizer, asked } = fakeSummarizer('Rich summary');
      await run(messages, { maxInputTokens: 20, summarize: { preserveRecent: 1 } }, { summarizer });
      expect(asked).toHaveLength(1);
      return summaryPrompt(asked[0]!);
    };

    it('describes media (no data URI payload), reasoning and tool calls', async () => {
      const prompt = await promptFor(history({ media: { url: `data:image/png;base64,${payload}`, contentType: 'image/png' } }));
      for (const want of [
        '[media: image/png]',
        '[media: application/pdf (https://example.com/spec.pdf)]',
        '[Reasoning: Thinking through the spec carefully]',
        '[Tool call: inspect({"target":"spec"})]',
      ]) {
        expect(prompt).toContain(want);
      }
      expect(prompt).not.toContain('[other content]');
      expect(prompt).not.toContain(payload);
    });

    it('reads the type of inline media without a content type from its data URI', async () => {
      const prompt = await promptFor(history({ media: { url: `data:image/png;base64,${payload}` } }));
      expect(prompt).toContain('[media: image/png]');
    });

    it('renders the content of a tool response with its output', async () => {
      const prompt = await promptFor(history({ media: { url: `data:image/png;base64,${payload}`, contentType: 'image/png' } }));
      expect(prompt).toContain('Multipart tool content detail');
    });

    it('renders one line per message, role first', () => {
      expect(renderForSummary([user('hi'), calls(request('t', { a: 1 })), result('t', 'out')])).toBe(
        'user: hi\nmodel: [Tool call: t({"a":1})]\ntool: [Tool response: t → out]',
      );
    });
  });

  it('caps the summarizer input, keeping head and tail, and appends the conversation to a prompt without a placeholder', async () => {
    const { summarizer, asked } = fakeSummarizer('Capped summary');
    const history = alternating(['H'.repeat(250_000), 'T'.repeat(250_000), 'Recent question']);
    await run(history, { maxInputTokens: 100, summarize: { preserveRecent: 1 } }, { summarizer });
    expect(asked).toHaveLength(1);
    const prompt = summaryPrompt(asked[0]!, 'Custom prompt without placeholder.');
    expect(prompt.startsWith('Custom prompt without placeholder.\n\nConversation to summarize:\n')).toBe(true);
    expect(prompt).toMatch(/\.\.\.\[\d+ chars of conversation omitted\]\.\.\./);
    expect(prompt.length).toBeLessThan(410_000);
  });

  it('summarizes a short history over budget, without a notice', async () => {
    const { summarizer, asked } = fakeSummarizer('Summary of turn 1');
    const history = alternating([`u1 ${'A'.repeat(170)}`, `m1 ${'B'.repeat(170)}`, `u2 ${'C'.repeat(170)}`, `m2 ${'D'.repeat(170)}`, `u3 ${'E'.repeat(170)}`]);
    const decided = await run(history, { maxInputTokens: 200, summarize: {} }, { summarizer });
    expect(asked).toHaveLength(1);
    expect(decided.stats).toMatchObject({ summarized: true, truncationNoticeInserted: false });
    expect(textOf(decided.view[0])).toContain('Summary of turn 1');
    expect(textOf(resolveCompressedHistory(decided.history)[0])).toContain('Summary of turn 1');
  });

  it('takes the newest summary when a summarized history is summarized again', async () => {
    const { summarizer } = fakeSummarizer('SUMMARY_1', 'SUMMARY_2');
    const config: Config = { maxInputTokens: 50, summarize: { preserveRecent: 1 } };
    const first = await run(alternating(['M1 '.repeat(50), 'R1 '.repeat(50), 'M2 '.repeat(50), 'R2 '.repeat(50)]), config, { summarizer });
    // The model's reply, stamped with the input tokens it reported, then the next user turn.
    const reply = model('done', { [COMPRESSION_KEY]: { inputTokens: 500 } });
    const second = await run([...first.history, reply, user('M3 '.repeat(50))], config, { summarizer, tokens: 500 });
    expect(second.view).toHaveLength(2);
    expect(textOf(second.view[0])).toContain('SUMMARY_2');
    const resolved = resolveCompressedHistory([...second.history, model('done')]);
    expect(resolved).toHaveLength(3);
    expect(textOf(resolved[0])).toContain('SUMMARY_2');
  });

  it('falls back to dropping when the summarizer gives no usable summary', async () => {
    const { summarizer, asked } = fakeSummarizer(undefined);
    const history = alternating([`u1 ${'X'.repeat(200)}`, `m1 ${'X'.repeat(200)}`, 'u2', 'm2', 'u3']);
    const decided = await run(history, { maxInputTokens: 100, preserveRecent: 3, noTruncationNotice: true, summarize: { preserveRecent: 3 } }, { summarizer });
    expect(asked).toHaveLength(1);
    expect(outline(decided.view)).toEqual(['user:u2', 'model:m2', 'user:u3']);
    expect(decided.stats?.summarized).toBe(false);
  });
});

describe('[tool limits] capping and truncating tool responses', () => {
  it('truncates the older tool response of a tool loop and keeps the newest intact', async () => {
    const history = [
      user('Run tool calls'),
      call('heavyTool', { query: 'call1' }),
      result('heavyTool', `Result for call1: ${'X'.repeat(300)}`),
      call('heavyTool', { query: 'call2' }),
      result('heavyTool', `Result for call2: ${'X'.repeat(300)}`),
    ];
    const decided = await run(history, { maxInputTokens: 150, toolResponses: { maxChars: 50, preserveRecent: 1 } }, { tokens: 500 });
    const tools = toolMessages(decided.view);
    expect(tools).toHaveLength(2);
    expect(outputOf(tools[0])).toMatch(TRUNCATED);
    expect(outputOf(tools[1])).not.toContain('[Truncated');
  });

  it('keeps every part of the newest tool message intact, truncating the older parallel parts', async () => {
    const history = [
      user('fetch reports'),
      calls(request('fetch', { id: '1' }), request('fetch', { id: '2' })),
      results(response('fetch', `OldA-${'X'.repeat(200)}`), response('fetch', `OldB-${'X'.repeat(200)}`)),
      calls(request('fetch', { id: '3' }), request('fetch', { id: '4' }), request('fetch', { id: '5' })),
      results(response('fetch', `New1-${'Y'.repeat(200)}`), response('fetch', `New2-${'Y'.repeat(200)}`), response('fetch', `New3-${'Y'.repeat(200)}`)),
    ];
    const decided = await run(history, { maxInputTokens: 50, toolResponses: { maxChars: 20, preserveRecent: 1 } });
    const [older, newest] = toolMessages(decided.view);
    for (const index of [0, 1]) expect(outputOf(older, index)).toMatch(TRUNCATED);
    for (const index of [0, 1, 2]) expect(outputOf(newest, index)).not.toContain('[Truncated');
  });

  it('caps an oversized tool response over budget with the safety cap marker', async () => {
    const decided = await run(
      [user('Call huge tool'), call('hugeTool'), result('hugeTool', 'x'.repeat(1000))],
      { maxInputTokens: 100, maxToolResponseChars: 100 },
      { tokens: 200 },
    );
    expect(outputOf(toolMessages(decided.view)[0])).toContain('[TRUNCATED: Response was 1000 chars');
  });

  it('caps an oversized tool response without a token budget, and reports it', async () => {
    const decided = await run([user('run'), call('bigTool'), result('bigTool', 'Z'.repeat(1000))], { maxToolResponseChars: 200 });
    expect(decided.stats?.toolResponsesSafetyCapped).toBe(1);
    expect(decided.stats?.inputTokensBefore).toBeGreaterThan(0);
    expect(outputOf(toolMessages(decided.view)[0])).toContain('[TRUNCATED: Response was 1000 chars');
  });

  it('leaves a part saved already truncated alone, and reports nothing', async () => {
    const already = '12345\n\n[Truncated 95 characters]';
    const history = [
      user('run tool'),
      call('myTool'),
      result('myTool', already, { metadata: { [COMPRESSION_KEY]: { truncated: true } } }),
      user('next question'),
    ];
    const decided = await run(history, { maxInputTokens: 100, toolResponses: { maxChars: 5, preserveRecent: -1 } });
    expect(outputOf(toolMessages(decided.view)[0])).toBe(already);
    expect(decided.stats).toBeUndefined();
  });

  it('flags the part it truncates, and the history keeps the original output with the record', async () => {
    const original = 'A'.repeat(500);
    const decided = await run([user('query'), call('toolA'), result('toolA', original), user('next')], {
      maxInputTokens: 10,
      toolResponses: { maxChars: 50, preserveRecent: -1 },
    });
    const sent = toolMessages(decided.view)[0]!;
    expect(recordOf(sent.content[0])?.truncated).toBe(true);
    expect(sent.metadata).toBeUndefined();
    const kept = toolMessages(decided.history)[0]!;
    expect(outputOf(kept)).toBe(original);
    expect(recordOf(kept.content[0])).toMatchObject({ truncated: true, rawOutput: true, maxChars: 50 });
  });

  it('truncates a capped part once newer tool output arrives', async () => {
    const config: Config = { maxInputTokens: 10, maxToolResponseChars: 200, toolResponses: { maxChars: 50, preserveRecent: 1 } };
    const first = await run([user('q'), call('toolA'), result('toolA', 'X'.repeat(500)), user('q2')], config);
    const capped = toolMessages(first.view)[0]!;
    expect(recordOf(capped.content[0])).toMatchObject({ capped: true });
    expect(recordOf(capped.content[0])?.truncated).toBeUndefined();

    // The caller saved the view (the capped part as sent) and carries it forward.
    const second = await run([user('q'), call('toolA'), capped, user('q2'), call('toolB'), result('toolB', 'recent tool output'), user('q3')], config);
    const part = second.view[2]!.content[0]!;
    expect(recordOf(part)).toMatchObject({ truncated: true, capped: true });
    expect(outputOf(second.view[2]).startsWith('X'.repeat(50))).toBe(true);
  });

  it('cuts whole characters: an emoji counts as one', async () => {
    const decided = await run([user('q'), result('emojiTool', `abcd😀${'Z'.repeat(200)}`)], {
      maxInputTokens: 10,
      toolResponses: { maxChars: 5, preserveRecent: -1 },
    });
    expect(outputOf(toolMessages(decided.view)[0]).startsWith('abcd😀\n\n[Truncated 200 characters]')).toBe(true);
  });

  describe('multipart tool responses', () => {
    const multipart = (output: unknown, ...content: Array<Record<string, unknown>>) => [
      user('run'),
      call('t', {}, '1'),
      result('t', output, { ref: '1', content }),
    ];
    const sentResponse = (view: Message[]) => responseOf(toolMessages(view)[0]);

    it('folds text content into the truncated output; the history keeps the content and resolves to the view', async () => {
      const large = 'X'.repeat(200_000);
      const decided = await run(multipart('ok', { text: large }), {
        maxInputTokens: 1000,
        maxToolResponseChars: 500,
        toolResponses: { maxChars: 100, preserveRecent: -1 },
      });
      const want = `ok\n\n${'X'.repeat(96)}\n\n[Truncated 199904 characters]`;
      expect(decided.stats?.toolResponsesTruncated).toBe(1);
      expect(sentResponse(decided.view).output).toBe(want);
      expect(sentResponse(decided.view).content).toBeUndefined();
      expect(responseOf(toolMessages(decided.history)[0]).content?.[0]?.text).toBe(large);
      const resolved = sentResponse(resolveCompressedHistory(decided.history));
      expect(resolved.output).toBe(want);
      expect(resolved.content).toBeUndefined();
    });

    it('does not count a part as capped when truncation cuts it further in the same pass', async () => {
      const decided = await run(multipart('ok', { text: 'X'.repeat(200_000) }), {
        maxInputTokens: 1000,
        maxToolResponseChars: 500,
        toolResponses: { maxChars: 100, preserveRecent: -1 },
      });
      expect(decided.stats?.toolResponsesSafetyCapped).toBe(0);
    });

    it('caps under budget, text content folded up to the cap', async () => {
      const decided = await run(multipart('ok', { text: 'A'.repeat(100) }, { text: 'B'.repeat(1000) }, { text: 'C'.repeat(500) }), {
        maxInputTokens: 100_000,
        maxToolResponseChars: 500,
      });
      expect(decided.stats?.toolResponsesSafetyCapped).toBe(1);
      expect(sentResponse(decided.view).output).toBe(
        `ok\n\n${'A'.repeat(100)}\n\n${'B'.repeat(394)}\n\n---\n\n[TRUNCATED: Response was 1602 chars but only first 500 are shown.]`,
      );
      expect(sentResponse(decided.view).content).toBeUndefined();
    });

    it('counts inline media at a flat size: under budget it is sent intact, truncated it is described', async () => {
      const dataUrl = `data:image/png;base64,${'A'.repeat(500_000)}`;
      const media = { media: { url: dataUrl, contentType: 'image/png' } };
      const under = await run(multipart('ok', media), { maxInputTokens: 2000 });
      expect(under.stats).toBeUndefined();
      expect(sentResponse(under.view).content).toEqual([media]);

      const truncated = await run(multipart('ok', media), { maxInputTokens: 100, toolResponses: { maxChars: 100, preserveRecent: -1 } });
      expect(truncated.stats?.toolResponsesTruncated).toBe(1);
      expect(sentResponse(truncated.view).output).toBe(`ok\n\n[media: image/png]\n\n[Truncated ${dataUrl.length - '[media: image/png]'.length} characters]`);
      expect(sentResponse(truncated.view).content).toBeUndefined();
    });
  });
});

describe('[dedupe] replacing older duplicate tool responses', () => {
  const dedupe: Config['deduplicateToolResponses'] = {};
  const isDeduplicated = (message: Message | undefined, index = 0) => outputOf(message, index).includes('Deduplicated');

  for (const refs of [false, true]) {
    it(`replaces the older response to the same call in a tool loop (${refs ? 'with' : 'without'} refs)`, async () => {
      const ref = (n: number) => (refs ? `call_unique_${n}` : undefined);
      const output = `Result for same-query: ${'A'.repeat(500)}`;
      const history = [
        user('Search multiple times'),
        call('search', { query: 'same-query' }, ref(1)),
        result('search', output, { ref: ref(1) }),
        call('search', { query: 'same-query' }, ref(2)),
        result('search', output, { ref: ref(2) }),
      ];
      const decided = await run(
        history,
        { maxInputTokens: 150, deduplicateToolResponses: { matchBy: 'name-and-input' }, toolResponses: { maxChars: 50, preserveRecent: -1 } },
        { tokens: 500 },
      );
      expect(isDeduplicated(toolMessages(decided.view)[0])).toBe(true);
    });
  }

  it('keeps responses to calls with different inputs', async () => {
    const history = [
      user('Search with distinct queries'),
      call('search', { query: 'first-query' }),
      result('search', `Result for first-query: ${'B'.repeat(50)}`),
      call('search', { query: 'second-query' }),
      result('search', `Result for second-query: ${'B'.repeat(50)}`),
    ];
    const decided = await run(history, { maxInputTokens: 150, deduplicateToolResponses: dedupe }, { tokens: 500 });
    for (const message of toolMessages(decided.view)) expect(isDeduplicated(message)).toBe(false);
  });

  it('replaces only the duplicate among parallel parts', async () => {
    const history = [
      user('run parallel tools'),
      calls(request('fetch', { id: 'shared' }, 'call_1'), request('fetch', { id: 'unique' }, 'call_2')),
      results(
        response('fetch', `Shared output 1 ${'X'.repeat(200)}`, { ref: 'call_1' }),
        response('fetch', `Unique output 2 ${'Y'.repeat(200)}`, { ref: 'call_2' }),
      ),
      call('fetch', { id: 'shared' }, 'call_3'),
      result('fetch', `Shared output 3 ${'Z'.repeat(200)}`, { ref: 'call_3' }),
    ];
    const decided = await run(history, { maxInputTokens: 50, deduplicateToolResponses: dedupe });
    const [older, newest] = toolMessages(decided.view);
    expect(isDeduplicated(older, 0)).toBe(true);
    expect(outputOf(older, 1).startsWith('Unique output 2 ')).toBe(true);
    expect(outputOf(newest).startsWith('Shared output 3 ')).toBe(true);
  });

  it('matches refless responses by position past reasoning parts', async () => {
    const history = [
      user('fetch both reports'),
      calls(reasoning('Thinking...'), request('fetchReport', { reportId: 'report-101' }), request('fetchReport', { reportId: 'report-102' })),
      results(response('fetchReport', 'Report 101 content'), response('fetchReport', 'Report 102 content')),
    ];
    const decided = await run(history, { maxMessages: 2, deduplicateToolResponses: { keepRecent: 1 } });
    const tool = toolMessages(decided.view)[0];
    expect([outputOf(tool, 0), outputOf(tool, 1)]).toEqual(['Report 101 content', 'Report 102 content']);
  });

  it('matches refless responses across turns', async () => {
    const history = [
      user('fetch reports'),
      calls(
        reasoning('First turn reasoning'),
        { text: 'Fetching 101 and 102' },
        request('fetchReport', { reportId: 'report-101' }),
        request('fetchReport', { reportId: 'report-102' }),
      ),
      results(response('fetchReport', `Report 101 v1 ${'X'.repeat(100)}`), response('fetchReport', `Report 102 v1 ${'Y'.repeat(100)}`)),
      calls(reasoning('Second turn reasoning'), request('fetchReport', { reportId: 'report-102' })),
      result('fetchReport', `Report 102 v2 ${'Z'.repeat(100)}`),
    ];
    const decided = await run(history, { maxInputTokens: 50, deduplicateToolResponses: { keepRecent: 1 } });
    const [first, second] = toolMessages(decided.view);
    expect(outputOf(first, 0).startsWith('Report 101 v1 ')).toBe(true);
    expect(isDeduplicated(first, 1)).toBe(true);
    expect(outputOf(second).startsWith('Report 102 v2 ')).toBe(true);
  });

  it('does not match reused refs, mixed ordering, or orphans', async () => {
    const history = [
      user('run'),
      results(response('orphan', 'Orphan 1'), response('orphan', 'Orphan 2')),
      calls(request('fetchReport', { id: 'a' }, '0'), request('fetchReport', { id: 'b' })),
      results(response('fetchReport', 'Out B'), response('fetchReport', 'Out A', { ref: '0' })),
      call('fetchReport', { id: 'c' }, '0'),
      result('fetchReport', `Out C ${'X'.repeat(200)}`, { ref: '0' }),
    ];
    const decided = await run(history, { maxInputTokens: 20, deduplicateToolResponses: { keepRecent: 1 } });
    const [orphans, mixed] = toolMessages(decided.view);
    expect([outputOf(orphans, 0), outputOf(orphans, 1)]).toEqual(['Orphan 1', 'Orphan 2']);
    expect([outputOf(mixed, 0), outputOf(mixed, 1)]).toEqual(['Out B', 'Out A']);
  });

  it('drops the content of a replaced response and keeps the newest content intact', async () => {
    const newMedia = { media: { contentType: 'image/png', url: 'data:image/png;base64,NEW_SCREENSHOT' } };
    const history = [
      user('take screenshots'),
      call('screenshot', { page: 'home' }, 'shot_1'),
      result('screenshot', `Captured screenshot 1 ${'X'.repeat(200)}`, {
        ref: 'shot_1',
        content: [{ media: { contentType: 'image/png', url: 'data:image/png;base64,OLD_SCREENSHOT' } }],
      }),
      call('screenshot', { page: 'home' }, 'shot_2'),
      result('screenshot', `Captured screenshot 2 ${'Y'.repeat(200)}`, { ref: 'shot_2', content: [newMedia] }),
    ];
    const decided = await run(history, { maxInputTokens: 50, deduplicateToolResponses: dedupe });
    const [older, newest] = toolMessages(decided.view);
    expect(outputOf(older)).toBe(DEDUPE_NOTICE);
    expect(responseOf(older).content).toBeUndefined();
    expect(responseOf(newest).content).toEqual([newMedia]);
  });

  it('never replaces a sole response', async () => {
    const history = [
      user('check single tool call'),
      call('fetch', { id: '1' }, 'call_1'),
      result('fetch', `Only response ${'X'.repeat(200)}`, { ref: 'call_1' }),
    ];
    const decided = await run(history, { maxInputTokens: 10, deduplicateToolResponses: dedupe });
    expect(outputOf(toolMessages(decided.view)[0]).startsWith('Only response ')).toBe(true);
  });
});
