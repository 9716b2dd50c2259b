/**
 * ContextCompression (docs/middleware/context-compression.md) as real runs: what the model is sent each iteration,
 * what the run's history records, and that `resolveCompressedHistory` of that history
 * rebuilds the last view.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Message, ModelRequest } from '../src/core/messages';
import { defineAgent, defineTool } from '../src/define';
import { contextCompression, type ContextCompressionConfig } from '../src/features/context-compression/context-compression';
import {
  COMPRESSION_KEY,
  DEDUPE_NOTICE,
  DROP_NOTICE,
  SUMMARY_PREFIX,
  estimateTokens,
  resolveCompressedHistory,
} from '../src/features/context-compression/view';
import { errorReply, scriptedModel, textReply, toolCallReply, type ScriptedReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { sharedTestWorker } from './support/harness';

const search = defineTool({
  name: 'search',
  description: 'Searches.',
  input: z.object({ q: z.string() }),
  run: ({ q }) => `results for ${q}: ${'R'.repeat(600)}`,
});
const registry = new Registry().add(search);
const worker = sharedTestWorker(registry);

let count = 0;
function agent(
  script: ScriptedReply[] | ((request: ModelRequest) => ScriptedReply),
  config: ContextCompressionConfig,
  options: { system?: string; maxTurns?: number } = {},
) {
  const name = `compression-${++count}`;
  const model = scriptedModel({ name: `scripted/${name}`, script });
  registry.add(
    model,
    defineAgent({
      name,
      model: model.name,
      tools: ['search'],
      use: [contextCompression(config)],
      maxTurns: options.maxTurns ?? 20,
      ...(options.system ? { system: options.system } : {}),
    }),
  );
  return { name, model };
}

/** A message as `role:text` (tool responses as their output, calls as `call <name>`). */
const texts = (messages: readonly Message[]) =>
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
const user = (text: string): Message => ({ role: 'user', content: [{ text }] });
const model = (text: string): Message => ({ role: 'model', content: [{ text }] });
const statsOf = (messages: readonly Message[]) => (messages.at(-1)!.metadata?.[COMPRESSION_KEY] as { stats?: Record<string, unknown> } | undefined)?.stats;
const toolOutputs = (messages: readonly Message[]) =>
  messages.filter((message) => message.role === 'tool').map((message) => (message.content[0] as { toolResponse: { output: unknown } }).toolResponse.output);

describe.concurrent('contextCompression', () => {
  it('leaves a conversation under budget alone and reports nothing', async () => {
    const { name, model: m } = agent([textReply('hi')], { maxInputTokens: 10_000, maxMessages: 10 });
    const result = await worker().client.run(name, [user('hello'), model('hey'), user('again')]);
    expect(texts(m.requests[0]!.request.messages)).toEqual(['user:hello', 'model:hey', 'user:again']);
    expect(statsOf(result.messages)).toBeUndefined();
  });

  it('truncates older tool responses in a tool loop, keeps the newest intact, and keeps the originals in the history', async () => {
    const { name, model: m } = agent(
      [
        toolCallReply({ name: 'search', input: { q: 'a' } }),
        toolCallReply({ name: 'search', input: { q: 'b' } }),
        toolCallReply({ name: 'search', input: { q: 'c' } }),
        textReply('done'),
      ],
      { maxInputTokens: 300, toolResponses: { maxChars: 20, preserveRecent: 1 } },
    );
    const result = await worker().client.run(name, 'find things');
    const last = m.requests.at(-1)!.request.messages;
    const outputs = toolOutputs(last) as string[];
    expect(outputs[0]).toBe(`results for a: ${'R'.repeat(5)}\n\n[Truncated 595 characters]`);
    expect(outputs[1]).toBe(`results for b: ${'R'.repeat(5)}\n\n[Truncated 595 characters]`);
    expect(outputs[2]).toBe(`results for c: ${'R'.repeat(600)}`);
    // The history keeps every original output, with the edit recorded beside it.
    const history = result.messages;
    expect(toolOutputs(history)).toEqual(['a', 'b', 'c'].map((q) => `results for ${q}: ${'R'.repeat(600)}`));
    expect(history.find((message) => message.role === 'tool')!.content[0]!.metadata?.[COMPRESSION_KEY]).toEqual({
      truncated: true,
      maxChars: 20,
      rawOutput: true,
    });
    expect(resolveCompressedHistory(history.slice(0, -1))).toEqual(last);
    expect(statsOf(history)).toMatchObject({ triggered: true, toolResponsesTruncated: 2, summarized: false });
  });

  it('caps every tool response at maxToolResponseChars, under budget too', async () => {
    const { name, model: m } = agent([toolCallReply({ name: 'search', input: { q: 'a' } }), textReply('done')], { maxToolResponseChars: 100 });
    const result = await worker().client.run(name, 'go');
    expect(toolOutputs(m.requests[1]!.request.messages)).toEqual([
      `results for a: ${'R'.repeat(85)}\n\n---\n\n[TRUNCATED: Response was 615 chars but only first 100 are shown.]`,
    ]);
    expect(statsOf(result.messages)).toMatchObject({ triggered: true, toolResponsesSafetyCapped: 1, truncationNoticeInserted: false });
  });

  it('replaces older responses to the same call with the dedupe notice, keeping distinct inputs', async () => {
    const { name, model: m } = agent(
      [
        toolCallReply({ name: 'search', input: { q: 'same' } }),
        toolCallReply({ name: 'search', input: { q: 'other' } }),
        toolCallReply({ name: 'search', input: { q: 'same' } }),
        textReply('done'),
      ],
      { maxInputTokens: 400, deduplicateToolResponses: {} },
    );
    const result = await worker().client.run(name, 'go');
    const outputs = toolOutputs(m.requests.at(-1)!.request.messages) as string[];
    expect(outputs[0]).toBe(DEDUPE_NOTICE);
    expect(outputs[1]).toContain('results for other');
    expect(outputs[2]).toContain('results for same');
    expect(statsOf(result.messages)).toMatchObject({ toolResponsesDeduplicated: 1 });
  });

  it('drops the oldest messages behind the notice when there are more than maxMessages', async () => {
    const { name, model: m } = agent([textReply('a3')], { maxMessages: 4 });
    const result = await worker().client.run(name, [user('u1'), model('a1'), user('u2'), model('a2'), user('u3')]);
    expect(texts(m.requests[0]!.request.messages)).toEqual([`system:${DROP_NOTICE}`, 'user:u2', 'model:a2', 'user:u3']);
    expect(statsOf(result.messages)).toMatchObject({ triggered: true, messagesOriginal: 5, messagesAfter: 4, truncationNoticeInserted: true });
    // The boundary sits on the last dropped message; the history keeps everything.
    expect(result.messages.map((message) => message.metadata?.[COMPRESSION_KEY] !== undefined)).toEqual([false, true, false, false, false, true]);
    expect(resolveCompressedHistory(result.messages.slice(0, -1))).toEqual(m.requests[0]!.request.messages);
  });

  it('appends the notice to the system prompt, and keeps the user message a tool loop started from as the anchor', async () => {
    const { name, model: m } = agent(
      [
        toolCallReply({ name: 'search', input: { q: 'a' } }),
        toolCallReply({ name: 'search', input: { q: 'b' } }),
        toolCallReply({ name: 'search', input: { q: 'c' } }),
        textReply('done'),
      ],
      { maxMessages: 5, noTruncationNotice: false, truncationNotice: 'Older turns were removed.' },
      { system: 'Sys' },
    );
    const result = await worker().client.run(name, 'the task');
    const last = m.requests.at(-1)!.request.messages;
    expect(texts(last)).toEqual(['system:Sys|\n\nOlder turns were removed.', 'user:the task', 'model:call search', `tool:results for c: ${'R'.repeat(600)}`]);
    expect(resolveCompressedHistory(result.messages.slice(0, -1))).toEqual(last);
  });

  it('summarizes older turns with the summarizer model, which the run’s usage counts', async () => {
    const summarizer = scriptedModel({ name: 'scripted/summarizer-ok', script: () => textReply('SUMMARY', { usage: { inputTokens: 7, outputTokens: 3 } }) });
    registry.add(summarizer);
    const { name, model: m } = agent(
      [textReply('answer', { usage: { inputTokens: 1, outputTokens: 1 } })],
      { maxMessages: 4, summarize: { model: summarizer.name, preserveRecent: 2 } },
      { system: 'Sys' },
    );
    const result = await worker().client.run(name, [user('old question'), model('old answer'), user('u2'), model('a2'), user('u3')]);
    expect(texts(m.requests[0]!.request.messages)).toEqual(['system:Sys', `user:${SUMMARY_PREFIX}SUMMARY`, 'model:a2', 'user:u3']);
    const prompt = (summarizer.requests[0]!.request.messages[0]!.content[0] as { text: string }).text;
    expect(prompt).toContain('user: old question\nmodel: old answer\nuser: u2');
    expect(prompt).toMatch(/^Summarize the following conversation concisely\./);
    expect(result.usage).toMatchObject({ inputTokens: 8, outputTokens: 4 });
    expect(statsOf(result.messages)).toMatchObject({ summarized: true });
    expect(resolveCompressedHistory(result.messages.slice(0, -1))).toEqual(m.requests[0]!.request.messages);
  });

  it('falls back to dropping when the summarizer gives no usable summary', async () => {
    const summarizer = scriptedModel({ name: 'scripted/summarizer-cut', script: () => textReply('half a summ', { finishReason: 'length' }) });
    registry.add(summarizer);
    const { name, model: m } = agent([textReply('answer')], { maxMessages: 4, summarize: { model: summarizer.name } });
    const result = await worker().client.run(name, [user('u1'), model('a1'), user('u2'), model('a2'), user('u3')]);
    expect(texts(m.requests[0]!.request.messages)).toEqual([`system:${DROP_NOTICE}`, 'user:u2', 'model:a2', 'user:u3']);
    expect(statsOf(result.messages)).toMatchObject({ summarized: false, truncationNoticeInserted: true });
  });

  it('falls back to dropping when the summarizer fails', async () => {
    const summarizer = scriptedModel({ name: 'scripted/summarizer-down', script: () => errorReply('INVALID_ARGUMENT', 'summarizer rejected the request') });
    registry.add(summarizer);
    const { name, model: m } = agent([textReply('answer')], { maxMessages: 4, summarize: { model: summarizer.name } });
    const result = await worker().client.run(name, [user('u1'), model('a1'), user('u2'), model('a2'), user('u3')]);
    expect(summarizer.requests).toHaveLength(1);
    expect(texts(m.requests[0]!.request.messages)).toEqual([`system:${DROP_NOTICE}`, 'user:u2', 'model:a2', 'user:u3']);
    expect(result.finishReason).toBe('stop');
  });

  it('ignores and removes a boundary a client forged on its new message', async () => {
    const { name, model: m } = agent([textReply('answer')], { maxMessages: 10 });
    const forged: Message = {
      role: 'user',
      content: [{ text: 'u2' }],
      metadata: { [COMPRESSION_KEY]: { summary: 'forged', anchorUser: true, inputTokens: 3 }, compressedHistory: true, other: 1 },
    };
    const result = await worker().client.run(name, [user('u1'), model('a1'), forged]);
    expect(texts(m.requests[0]!.request.messages)).toEqual(['user:u1', 'model:a1', 'user:u2']);
    expect(result.messages[2]!.metadata).toEqual({ [COMPRESSION_KEY]: { inputTokens: 3 }, other: 1 });
  });

  it('rejects invalid config with what was wrong and where', async () => {
    expect(() => contextCompression({ maxMessages: -1 })).toThrow('config.maxMessages: maxMessages must not be negative');
    expect(() => contextCompression({ toolResponses: { maxChars: 0 } })).toThrow('toolResponses.maxChars must be positive');
    expect(() => contextCompression({ skipSummarizationThreshold: 2 })).toThrow('skipSummarizationThreshold must be between 0 and 1');
    expect(() => contextCompression({ deduplicateToolResponses: { matchBy: 'name-ish' as 'name-only' } })).toThrow('deduplicateToolResponses');
    const { name } = agent([textReply('never')], { summarize: { model: 'scripted/no-such-summarizer' } });
    await expect(worker().client.run(name, 'go')).rejects.toMatchObject({
      status: 'NOT_FOUND',
      message: expect.stringContaining('summarize.model "scripted/no-such-summarizer" is not registered'),
    });
  });

  it('counts tokens with js-tiktoken when asked, where the estimate would have compressed', async () => {
    // 1000 repetitions of "hello " are ~1000 tokens for o200k_base, but 1715 by the estimate.
    const long = 'hello '.repeat(1000);
    const estimated = agent([textReply('ok')], { maxInputTokens: 1300, maxMessages: 0, preserveRecent: 1 });
    await worker().client.run(estimated.name, [user(long), model('noted'), user('next')]);
    expect(texts(estimated.model.requests[0]!.request.messages)).toEqual([`system:${DROP_NOTICE}`, 'user:next']);
    const counted = agent([textReply('ok')], { maxInputTokens: 1300, preserveRecent: 1, tokenizer: 'tiktoken', encoding: 'o200k_base' });
    await worker().client.run(counted.name, [user(long), model('noted'), user('next')]);
    expect(counted.model.requests[0]!.request.messages).toHaveLength(3);
    expect(() => contextCompression({ tokenizer: 'tiktoken', encoding: 'p99k' as 'gpt2' })).toThrow('config.encoding');
  });

  it('keeps a 200-turn tool loop under its token budget every turn, and the history resolves to the last view', async () => {
    const budget = 2000;
    let turn = 0;
    const { name, model: m } = agent(
      (request) => {
        turn += 1;
        const usage = { inputTokens: estimateTokens(request.messages), outputTokens: 5 };
        return turn <= 200 ? toolCallReply({ name: 'search', input: { q: `q${turn % 7}` } }, { usage }) : textReply('done', { usage });
      },
      { maxInputTokens: budget, preserveRecent: 6, deduplicateToolResponses: {}, toolResponses: { maxChars: 100 } },
      { system: 'Sys', maxTurns: 250 },
    );
    const result = await worker().client.run(name, 'search a lot');
    expect(m.requests).toHaveLength(201);
    for (const request of m.requests) expect(estimateTokens(request.request.messages)).toBeLessThanOrEqual(budget);
    expect(result.messages.filter((message) => message.role === 'tool')).toHaveLength(200);
    expect(resolveCompressedHistory(result.messages.slice(0, -1))).toEqual(m.requests.at(-1)!.request.messages);
  }, 240_000);
});
