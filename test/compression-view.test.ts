/**
 * ContextCompression's pure pieces (docs/middleware/context-compression.md): the size estimate, how a tool response is
 * cut to a limit (the reference's exact strings), and how a history that records its
 * compression resolves to the model's view. The middleware that writes these records is not
 * wired yet; these are the functions it and the session resume path share.
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '../src/core/messages';
import { answeredInputs, compress, type CompressionOptions } from '../src/features/context-compression/compress';
import {
  COMPRESSION_KEY,
  DEDUPE_NOTICE,
  DROP_NOTICE,
  SUMMARY_PREFIX,
  cutToolResponse,
  estimateTokens,
  isPinned,
  resolveCompressedHistory,
} from '../src/features/context-compression/view';

/** One decision's options: the middleware's defaults, then `overrides`. */
const options = (overrides: Partial<CompressionOptions>): CompressionOptions => ({
  maxInputTokens: 0,
  maxMessages: 0,
  preserveRecent: 4,
  preserveRecentSet: false,
  maxToolResponseChars: 400_000,
  skipSummarizationThreshold: 0,
  noTruncationNotice: false,
  ...overrides,
});
const user = (text: string, metadata?: Record<string, unknown>): Message => ({ role: 'user', content: [{ text }], ...(metadata ? { metadata } : {}) });
const model = (text: string, metadata?: Record<string, unknown>): Message => ({ role: 'model', content: [{ text }], ...(metadata ? { metadata } : {}) });
const system = (text: string): Message => ({ role: 'system', content: [{ text }] });
const call = (name: string, ref: string): Message => ({ role: 'model', content: [{ toolRequest: { name, ref, input: {} } }] });
const result = (name: string, ref: string, output: unknown, metadata?: Record<string, unknown>): Message => ({
  role: 'tool',
  content: [{ toolResponse: { name, ref, output }, ...(metadata ? { metadata } : {}) }],
});
/** A message rendered as `role:text` (tool responses as their output), for compact comparisons. */
const texts = (messages: Message[]) =>
  messages.map(
    (message) =>
      `${message.role}:${message.content
        .map((part) =>
          'text' in part
            ? part.text
            : 'toolResponse' in part
              ? String(part.toolResponse.output)
              : 'toolRequest' in part
                ? `call ${part.toolRequest.name}`
                : '?',
        )
        .join('|')}`,
  );

describe('the size estimate', () => {
  it('counts characters (code points) at 3.5 per token, inline media at a flat 1000', () => {
    expect(estimateTokens([user('x'.repeat(35))])).toBe(10);
    expect(estimateTokens([user('😀'.repeat(7))])).toBe(2);
    const inline = { role: 'user', content: [{ media: { url: `data:image/png;base64,${'A'.repeat(500_000)}`, contentType: 'image/png' } }] } as Message;
    expect(estimateTokens([inline])).toBe(Math.ceil(1000 / 3.5));
    const response = {
      role: 'tool',
      content: [{ toolResponse: { name: 't', output: 'ok', content: [{ media: { url: 'data:x', contentType: 'image/png' } }] } }],
    } as Message;
    // A tool response counts as the JSON of its name, ref and output, plus its content.
    expect(estimateTokens([response])).toBe(Math.ceil(('{"name":"t","output":"ok"}'.length + 1000) / 3.5));
    const request = { role: 'model', content: [{ toolRequest: { name: 'search', ref: 'r1', input: { q: 'x' } } }] } as Message;
    expect(estimateTokens([request])).toBe(Math.ceil('{"name":"search","ref":"r1","input":{"q":"x"}}'.length / 3.5));
  });
});

describe('cutting a tool response', () => {
  const response = (output: unknown, ...content: Array<Record<string, unknown>>) => ({ name: 't', ref: '1', output, content });

  it('folds text content into the truncated output', () => {
    const cut = cutToolResponse(response('ok', { text: 'X'.repeat(200_000) }), 100, 'truncated');
    expect(cut.output).toBe(`ok\n\n${'X'.repeat(96)}\n\n[Truncated 199904 characters]`);
    expect(cut.content).toBeUndefined();
  });

  it('marks a safety cap with the response size', () => {
    const cut = cutToolResponse(response('ok', { text: 'A'.repeat(100) }, { text: 'B'.repeat(1000) }, { text: 'C'.repeat(500) }), 500, 'capped');
    expect(cut.output).toBe(`ok\n\n${'A'.repeat(100)}\n\n${'B'.repeat(394)}\n\n---\n\n[TRUNCATED: Response was 1602 chars but only first 500 are shown.]`);
    expect(cut.content).toBeUndefined();
  });

  it('drops the content when the output alone exceeds the limit', () => {
    const cut = cutToolResponse(response('O'.repeat(200), { text: 'C'.repeat(300) }), 100, 'truncated');
    expect(cut.output).toBe(`${'O'.repeat(100)}\n\n[Truncated 400 characters]`);
    expect(cut.content).toBeUndefined();
  });

  it('never splits a character', () => {
    const cut = cutToolResponse(response('😀'.repeat(10)), 3, 'truncated');
    expect(cut.output).toBe('😀😀😀\n\n[Truncated 7 characters]');
  });

  it('describes media that does not fit, whole or not at all', () => {
    const dataUrl = `data:image/png;base64,${'A'.repeat(500_000)}`;
    const inline = cutToolResponse(response('ok', { media: { url: dataUrl, contentType: 'image/png' } }), 100, 'truncated');
    expect(inline.output).toBe(`ok\n\n[media: image/png]\n\n[Truncated ${dataUrl.length - '[media: image/png]'.length} characters]`);
    const url = `https://example.com/assets/${'img'.repeat(100)}.jpg`;
    const remote = response('ok', { media: { url, contentType: 'image/jpeg' } });
    expect(cutToolResponse(remote, 50, 'truncated').output).toBe(
      `ok\n\n[media: image/jpeg]\n\n[Truncated ${url.length - '[media: image/jpeg]'.length} characters]`,
    );
    expect(cutToolResponse(remote, 10, 'truncated').output).toBe(`ok\n\n[Truncated ${url.length} characters]`);
  });

  it('keeps a structured part that fits exactly', () => {
    const data = { data: { status: 'ready' } };
    const cut = cutToolResponse(response('ok', data, { text: 'X'.repeat(200) }), 20, 'truncated');
    expect(cut.output).toBe('ok\n\n[Truncated 200 characters]');
    expect(cut.content).toEqual([data]);
  });

  it('cuts a structured output as its JSON', () => {
    const cut = cutToolResponse(response({ rows: 'r'.repeat(50) }), 10, 'truncated');
    expect(cut.output).toBe(`{"rows":"r\n\n[Truncated ${JSON.stringify({ rows: 'r'.repeat(50) }).length - 10} characters]`);
  });
});

describe('resolving a compressed history', () => {
  it('without a boundary re-applies recorded tool edits and hides rawOutput', () => {
    const big = 'x'.repeat(600);
    const history = [
      user('go'),
      call('search', '1'),
      result('search', '1', big, { [COMPRESSION_KEY]: { truncated: true, maxChars: 10, rawOutput: true } }),
      call('search', '2'),
      result('search', '2', big, { [COMPRESSION_KEY]: { deduplicated: true, rawOutput: true } }),
    ];
    const view = resolveCompressedHistory(history);
    expect(texts(view)).toEqual([
      'user:go',
      'model:call search',
      `tool:xxxxxxxxxx\n\n[Truncated 590 characters]`,
      'model:call search',
      `tool:${DEDUPE_NOTICE}`,
    ]);
    const edited = view[2]!.content[0]!;
    expect(edited.metadata?.[COMPRESSION_KEY]).toEqual({ truncated: true, maxChars: 10 });
    // The history itself is untouched: it keeps the original output.
    expect((history[2]!.content[0] as { toolResponse: { output: unknown } }).toolResponse.output).toBe(big);
  });

  it('with a boundary: system messages, the notice, the summary, then what follows the boundary', () => {
    const history = [
      system('Sys'),
      user('q1'),
      model('a1', { [COMPRESSION_KEY]: { summary: 'SUMMARY', stats: { truncationNoticeInserted: true } } }),
      user('q2'),
      model('a2'),
    ];
    const view = resolveCompressedHistory(history);
    expect(texts(view)).toEqual([`system:Sys|\n\n${DROP_NOTICE}`, `user:${SUMMARY_PREFIX}SUMMARY`, 'user:q2', 'model:a2']);
  });

  it('a standalone notice when there is no system message, and a custom notice text', () => {
    const history = [user('q1'), model('a1', { [COMPRESSION_KEY]: { summary: '', truncationNotice: 'Older turns removed.' } }), user('q2'), model('a2')];
    const view = resolveCompressedHistory(history);
    expect(texts(view)).toEqual(['system:Older turns removed.', 'user:q2', 'model:a2']);
    expect(view[0]!.metadata?.[COMPRESSION_KEY]).toEqual({ notice: true, standaloneNotice: true });
  });

  it('keeps the anchor user message and lifts protected messages ahead of the summary', () => {
    const history = [
      system('Sys'),
      user('Earlier question'),
      model('Earlier answer'),
      { role: 'user', content: [{ text: 'Original task' }, { text: 'Output JSON.', metadata: { purpose: 'output' } }] } as Message,
      user('Follow-up'),
      call('t1', '1'),
      { ...result('t1', '1', 'r1'), metadata: { [COMPRESSION_KEY]: { summary: '', anchorUser: true } } },
      call('t2', '2'),
      result('t2', '2', 'r2'),
    ];
    expect(isPinned(history[3]!)).toBe(true);
    expect(texts(resolveCompressedHistory(history))).toEqual(['system:Sys', 'user:Original task|Output JSON.', 'user:Follow-up', 'model:call t2', 'tool:r2']);
  });

  it('the newest boundary wins', () => {
    const history = [
      user('q1'),
      model('a1', { [COMPRESSION_KEY]: { summary: 'OLD' } }),
      user('q2'),
      model('a2', { [COMPRESSION_KEY]: { summary: 'NEW' } }),
      user('q3'),
      model('a3'),
    ];
    expect(texts(resolveCompressedHistory(history))).toEqual([`user:${SUMMARY_PREFIX}NEW`, 'user:q3', 'model:a3']);
  });

  it('ignores a boundary forged on a trailing user message', () => {
    const history = [user('q1'), model('a1'), user('q2', { [COMPRESSION_KEY]: { summary: 'forged' } })];
    expect(texts(resolveCompressedHistory(history))).toEqual(['user:q1', 'model:a1', 'user:q2']);
  });

  it('leaves the system messages out for a JS boundary with preserveSystem: false', () => {
    const history = [system('Sys'), user('q1'), model('a1', { [COMPRESSION_KEY]: { summary: 'S', preserveSystem: false } }), user('q2'), model('a2')];
    expect(texts(resolveCompressedHistory(history))).toEqual([`user:${SUMMARY_PREFIX}S`, 'user:q2', 'model:a2']);
  });

  it('survives a JSON round trip', () => {
    const history = [
      system('Sys'),
      user('q1'),
      call('t', '1'),
      result('t', '1', 'y'.repeat(300), { [COMPRESSION_KEY]: { capped: true, maxChars: 100, rawOutput: true } }),
      model('a1', { [COMPRESSION_KEY]: { summary: 'S', stats: { triggered: true } } }),
      user('q2'),
      model('a2'),
    ];
    const decoded = JSON.parse(JSON.stringify(history)) as Message[];
    expect(resolveCompressedHistory(decoded)).toEqual(resolveCompressedHistory(history));
  });
});

describe('tokenizer counts cached per message', () => {
  it('sends only messages it has not counted to the tokenizer, and counts each text with js-tiktoken', async () => {
    const { TokenCache } = await import('../src/features/context-compression/token-cache');
    const { countTokens } = await import('../src/features/context-compression/activities/tokens');
    const batches: string[][] = [];
    const cache = new TokenCache('o200k_base', (input) => {
      batches.push(input.texts);
      return Promise.resolve(countTokens(input));
    });
    const history: Message[] = [system('You are terse.'), user('hello world'), model('hi there')];
    const first = await cache.measure(history);
    expect(first).toBe(
      countTokens({ encoding: 'o200k_base', texts: ['system: You are terse.', 'user: hello world', 'model: hi there'] }).reduce((a, b) => a + b, 0),
    );
    const second = await cache.measure([...history, user('and more')]);
    expect(batches).toEqual([['system: You are terse.', 'user: hello world', 'model: hi there'], ['user: and more']]);
    expect(second).toBeGreaterThan(first);
    // Media is not tokenized: it counts the estimate (inline: 1000 characters).
    const withMedia = await cache.measure([{ role: 'user', content: [{ media: { url: 'data:image/png;base64,AAAA', contentType: 'image/png' } }] }]);
    expect(withMedia).toBe(countTokens({ encoding: 'o200k_base', texts: ['user: '] })[0]! + Math.ceil(1000 / 3.5));
  });

  it('remembers counts per worker, so a new run of a session does not tokenize its history again', async () => {
    const { countTokens, tokenizerStats } = await import('../src/features/context-compression/activities/tokens');
    const texts = [`user: ${'a long message '.repeat(50)}${Math.random()}`, `model: ${Math.random()}`];
    const before = { ...tokenizerStats };
    const first = countTokens({ encoding: 'cl100k_base', texts });
    expect(tokenizerStats.tokenized - before.tokenized).toBe(2);
    const again = countTokens({ encoding: 'cl100k_base', texts: [...texts, 'user: new'] });
    expect(again.slice(0, 2)).toEqual(first);
    expect(tokenizerStats.tokenized - before.tokenized).toBe(3);
    expect(tokenizerStats.remembered - before.remembered).toBe(2);
    // Another encoding counts the same text afresh.
    countTokens({ encoding: 'o200k_base', texts: texts.slice(0, 1) });
    expect(tokenizerStats.tokenized - before.tokenized).toBe(4);
  });

  it('rejects an unknown encoding', async () => {
    const { countTokens } = await import('../src/features/context-compression/activities/tokens');
    expect(() => countTokens({ encoding: 'nope' as 'gpt2', texts: ['x'] })).toThrow('unknown tiktoken encoding "nope"; known: o200k_base, cl100k_base');
  });
});

describe('one compression decision (the reference’s slot and anchor rules)', async () => {
  const alternating = (pairs: number) =>
    Array.from({ length: pairs * 2 - 1 }, (_, index) => (index % 2 === 0 ? user(`u${index / 2 + 1}`) : model(`m${(index + 1) / 2}`)));

  it('an explicit preserveRecent bounds a drop triggered by maxMessages', async () => {
    const result = await compress(alternating(6), options({ maxMessages: 10, preserveRecent: 2, preserveRecentSet: true }));
    expect(texts(result.view)).toEqual([`system:${DROP_NOTICE}`, 'user:u6']);
  });

  it('drops nothing over budget while the view fits the slots, and reports nothing', async () => {
    const result = await compress([user(`u1${'X'.repeat(100)}`), model('m1'), user('u2'), model('m2'), user('u3')], options({ maxInputTokens: 30 }));
    expect(result.view).toHaveLength(5);
    expect(result.stats).toBeUndefined();
    const deduped = await compress(
      [user('x'.repeat(100))],
      options({ maxInputTokens: 10, deduplicateToolResponses: { matchBy: 'name-and-input', keepRecent: 1 } }),
    );
    expect(deduped.stats).toBeUndefined();
  });

  it('with one slot keeps the newest user message as the anchor and the model reply after it', async () => {
    const result = await compress([user('u1'), model('m1'), user('u2'), model('m2')], options({ maxMessages: 2 }));
    expect(texts(result.view)).toEqual([`system:${DROP_NOTICE}`, 'user:u2', 'model:m2']);
    expect(resolveCompressedHistory(result.history)).toEqual(result.view);
  });

  it('drops a system message in the middle of the conversation like any other', async () => {
    const result = await compress([user('u1'), model('m1'), system('mid'), user('u2')], options({ maxMessages: 2 }));
    expect(texts(result.view)).toEqual([`system:${DROP_NOTICE}`, 'user:u2']);
  });

  it('leaves a part saved already cut as it is, and an edited part that fits uncut', () => {
    const saved = result('t', '1', '12345\n\n[Truncated 95 characters]', { [COMPRESSION_KEY]: { truncated: true, maxChars: 5 } });
    const fits = result('t', '2', 'abc', { [COMPRESSION_KEY]: { truncated: true, maxChars: 10, rawOutput: true } });
    expect(texts(resolveCompressedHistory([user('go'), call('t', '1'), saved, call('t', '2'), fits])).slice(2)).toEqual([
      'tool:12345\n\n[Truncated 95 characters]',
      'model:call t',
      'tool:abc',
    ]);
  });

  it('does not add the notice twice to a system message that already has it', () => {
    const noticed: Message = { role: 'system', content: [{ text: 'Sys' }, { text: `\n\n${DROP_NOTICE}`, metadata: { [COMPRESSION_KEY]: { notice: true } } }] };
    const view = resolveCompressedHistory([
      noticed,
      user('q1'),
      model('a1', { [COMPRESSION_KEY]: { summary: '', stats: { truncationNoticeInserted: true } } }),
      user('q2'),
    ]);
    expect(view[0]!.content).toHaveLength(2);
  });
});

describe('dropping after a summary', async () => {
  const base = {
    maxInputTokens: 0,
    preserveRecent: 4,
    preserveRecentSet: false,
    maxToolResponseChars: 400_000,
    skipSummarizationThreshold: 0,
    noTruncationNotice: false,
  };

  it('never takes the summary for the anchor: with no user message left, the summary is carried onto the new boundary', async () => {
    const history = [
      user('u1'),
      model('m1', { [COMPRESSION_KEY]: { summary: 'S' } }),
      call('t', '1'),
      result('t', '1', 'r1'),
      call('t', '2'),
      result('t', '2', 'r2'),
      call('t', '3'),
      result('t', '3', 'r3'),
    ];
    const decided = await compress(history, { ...base, maxMessages: 4 });
    expect(texts(decided.view)).toEqual([`system:${DROP_NOTICE}`, `user:${SUMMARY_PREFIX}S`, 'model:call t', 'tool:r3']);
    expect(resolveCompressedHistory(decided.history)).toEqual(decided.view);
  });

  it('does not summarize past maxMessages: dropping decides instead', async () => {
    const history = [user('u1'), model('m1'), user('u2'), call('t', '1'), result('t', '1', 'a'), result('t', '1', 'b')];
    let asked = 0;
    const decided = await compress(
      history,
      { ...base, maxMessages: 3, summarize: { preserveRecent: 6 } },
      { summarizer: () => Promise.resolve(`S${++asked}`) },
    );
    expect(asked).toBe(0);
    // The final [model, tool…] group is kept whole even past the cap, behind the user message it answers.
    expect(texts(decided.view)).toEqual([`system:${DROP_NOTICE}`, 'user:u2', 'model:call t', 'tool:a', 'tool:b']);
  });
});

describe('dedupe of a truncated response', async () => {
  it('replaces an older duplicate even when it was truncated, and records the notice', async () => {
    const search = (ref: string): Message => ({ role: 'model', content: [{ toolRequest: { name: 'search', ref, input: { q: 1 } } }] });
    const history = [
      user('go'),
      search('1'),
      result('search', '1', 'x'.repeat(300), { [COMPRESSION_KEY]: { truncated: true, maxChars: 20, rawOutput: true } }),
      search('2'),
      result('search', '2', 'fresh'),
    ];
    const decided = await compress(history, {
      maxInputTokens: 10,
      maxMessages: 0,
      preserveRecent: 4,
      preserveRecentSet: false,
      maxToolResponseChars: 400_000,
      deduplicateToolResponses: { matchBy: 'name-and-input', keepRecent: 1 },
      skipSummarizationThreshold: 0,
      noTruncationNotice: false,
    });
    expect(texts(decided.view).filter((line) => line.startsWith('tool:'))).toEqual([`tool:${DEDUPE_NOTICE}`, 'tool:fresh']);
    expect(decided.history[2]!.content[0]!.metadata?.[COMPRESSION_KEY]).toEqual({ deduplicated: true, notice: DEDUPE_NOTICE, rawOutput: true });
    expect(decided.stats?.toolResponsesDeduplicated).toBe(1);
  });
});

describe('reference parity details', async () => {
  const { reconcileNotices } = await import('../src/features/context-compression/view');
  const requests = (...calls: Array<[string, string | undefined, unknown]>): Message => ({
    role: 'model',
    content: calls.map(([name, ref, input]) => ({ toolRequest: { name, ...(ref ? { ref } : {}), input } })),
  });
  const answers = (...responses: Array<[string, string | undefined]>): Message => ({
    role: 'tool',
    content: responses.map(([name, ref]) => ({ toolResponse: { name, ...(ref ? { ref } : {}), output: `${name}:${ref ?? '-'}` } })),
  });

  it('matches responses in several tool messages of one turn, claiming refs before positions', () => {
    // The refless response sits first, but request 0 is named by the second response's ref.
    const view = [user('go'), requests(['search', 'a', { q: 1 }], ['search', undefined, { q: 2 }]), answers(['search', undefined]), answers(['search', 'a'])];
    const inputs = answeredInputs(view);
    expect(inputs.get('3:0')).toEqual({ q: 1 });
    expect(inputs.get('2:0')).toEqual({ q: 2 });
  });

  it('finds a request by ref in an earlier turn, and groups no response it cannot match', () => {
    const view = [
      user('go'),
      requests(['read', 'r1', { path: 'a' }]),
      answers(['read', 'r1']),
      user('again'),
      answers(['read', 'r1']),
      answers(['read', undefined]),
    ];
    const inputs = answeredInputs(view);
    expect(inputs.get('4:0')).toEqual({ path: 'a' });
    // After a user message no turn's requests are open: a refless response matches nothing.
    expect(inputs.has('5:0')).toBe(false);
  });

  it('deduplicates across tool messages of one turn by the request each answers', async () => {
    const history = [
      user('go'),
      requests(['search', 'a', { q: 1 }], ['search', 'b', { q: 1 }], ['search', 'c', { q: 2 }]),
      answers(['search', 'a']),
      answers(['search', 'b'], ['search', 'c']),
    ];
    const result = await compress(
      history,
      options({ maxMessages: 3, noTruncationNotice: true, deduplicateToolResponses: { matchBy: 'name-and-input', keepRecent: 1 } }),
    );
    expect(result.stats?.toolResponsesDeduplicated).toBe(1);
    const outputs = resolveCompressedHistory(result.history).flatMap((message) =>
      message.content.flatMap((part) => ('toolResponse' in part ? [part.toolResponse.output] : [])),
    );
    expect(outputs).toEqual([DEDUPE_NOTICE, 'search:b', 'search:c']);
  });

  it('folds a saved standalone notice into the real system message, or keeps only the first', () => {
    const notice: Message = { role: 'system', content: [{ text: DROP_NOTICE }], metadata: { [COMPRESSION_KEY]: { notice: true, standaloneNotice: true } } };
    const folded = reconcileNotices([notice, system('Sys'), user('q')], DROP_NOTICE);
    expect(texts(folded.messages)).toEqual([`system:Sys|\n\n${DROP_NOTICE}`, 'user:q']);
    expect(folded.messages[0]!.metadata?.[COMPRESSION_KEY]).toEqual({ notice: true });
    expect(folded.sources).toEqual([1, 2]);
    const twice = reconcileNotices([notice, user('q'), { ...notice }, model('a')], DROP_NOTICE);
    expect(texts(twice.messages)).toEqual([`system:${DROP_NOTICE}`, 'user:q', 'model:a']);
    const alone = [notice, user('q')];
    expect(reconcileNotices(alone, DROP_NOTICE).messages).toEqual(alone);
  });

  it('a JS boundary with preserveSystem: false adds no notice and hides notice messages after it', () => {
    const notice: Message = { role: 'system', content: [{ text: 'old notice' }], metadata: { [COMPRESSION_KEY]: { notice: true } } };
    const history = [
      user('q1'),
      model('a1', { [COMPRESSION_KEY]: { summary: '', preserveSystem: false, stats: { truncationNoticeInserted: true } } }),
      notice,
      user('q2'),
      model('a2'),
    ];
    expect(texts(resolveCompressedHistory(history))).toEqual(['user:q2', 'model:a2']);
  });

  it('a protected latest user message is the anchor already in the view: nothing is added', () => {
    const pinned = user('instructions', { _genkit_prompt: true });
    const history = [
      user('q0'),
      pinned,
      { ...call('t', '1'), metadata: { [COMPRESSION_KEY]: { summary: '', anchorUser: true } } },
      result('t', '1', 'r'),
      model('done'),
    ];
    expect(texts(resolveCompressedHistory(history))).toEqual(['user:instructions', 'tool:r', 'model:done']);
  });

  it('without a token budget reports the stamped input tokens, and the estimate when there are none', async () => {
    const history = [user('x'.repeat(70)), model('m1'), user('u2'), model('m2'), user('u3')];
    const stamped = await compress(history, options({ maxMessages: 2 }), { tokens: 3 });
    expect(stamped.stats?.inputTokensBefore).toBe(3);
    const estimated = await compress(history, options({ maxMessages: 2 }));
    expect(estimated.stats?.inputTokensBefore).toBe(estimateTokens(history));
  });
});
