/**
 * bench/compression: the cost of one ContextCompression decision on a ~200k-token history,
 * three ways: the run's per-message token cache warm (the steady state of a long run: only the
 * newest messages are new); a new run's empty cache with the worker's remembered counts warm
 * (the next run of a session on the same worker: countTokens answers from its memory by text
 * hash); and from scratch, both forgotten, so every text is tokenized. Then the reference's
 * character estimate for scale. Not a test: prints medians, asserts nothing.
 *
 *   npx tsx bench/compression.ts [repetitions]
 */
import { performance } from 'node:perf_hooks';
import type { Message } from '../src/core/messages';
import { countTokens, forgetRememberedCounts, tokenizerStats } from '../src/features/context-compression/activities/tokens';
import { compress, type CompressionOptions } from '../src/features/context-compression/compress';
import { TokenCache } from '../src/features/context-compression/token-cache';
import { result } from './report';

const repetitions = Number(process.argv[2] ?? 7);
const words = ['alpha', 'beta', 'gamma', 'delta', 'cluster', 'latency', 'request', 'region', 'error', 'budget'];

/** A tool loop of `turns` rounds; each tool answer is ~`chars` characters of varied text. */
function history(turns: number, chars: number, seed: number): Message[] {
  const messages: Message[] = [
    { role: 'system', content: [{ text: 'You are a careful researcher.' }] },
    { role: 'user', content: [{ text: 'Investigate the incident.' }] },
  ];
  for (let turn = 0; turn < turns; turn++) {
    const input = { q: `query ${turn}` };
    let output = '';
    for (let index = 0; output.length < chars; index++) output += `${words[(index * 7 + turn + seed) % words.length]}-${(index * 31 + turn) % 997} `;
    messages.push({ role: 'model', content: [{ toolRequest: { name: 'search', ref: `${turn}`, input } }] });
    messages.push({ role: 'tool', content: [{ toolResponse: { name: 'search', ref: `${turn}`, output } }] });
  }
  return messages;
}

const options: CompressionOptions = {
  maxInputTokens: 150_000,
  maxMessages: 0,
  preserveRecent: 4,
  preserveRecentSet: false,
  maxToolResponseChars: 400_000,
  deduplicateToolResponses: { matchBy: 'name-and-input', keepRecent: 1 },
  toolResponses: { maxChars: 2000, preserveRecent: 2 },
  skipSummarizationThreshold: 0,
  noTruncationNotice: false,
};
const count = (input: Parameters<typeof countTokens>[0]) => Promise.resolve(countTokens(input));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main() {
  const base = history(250, 2800, 1);
  const probe = new TokenCache('o200k_base', count);
  const total = await probe.measure(base);
  console.log(`history: ${base.length} messages, ${total} tokens (o200k_base), ${Math.round(JSON.stringify(base).length / 1024)} KiB`);

  const cached = new TokenCache('o200k_base', count);
  await cached.measure(base);
  const timings = { cached: [] as number[], remembered: [] as number[], scratch: [] as number[], estimate: [] as number[] };
  const tokenized = { remembered: [] as number[], scratch: [] as number[] };
  let grown = base;
  for (let rep = 0; rep < repetitions; rep++) {
    // One more turn, as the next iteration of the run sees it.
    grown = [...grown, ...history(1, 2800, rep + 100).slice(2)];
    let start = performance.now();
    await compress(grown, options, { measure: (messages) => cached.measure(messages) });
    timings.cached.push(performance.now() - start);
    // A new run on the same worker: its cache is empty, the worker remembers every count.
    const fresh = new TokenCache('o200k_base', count);
    let before = tokenizerStats.tokenized;
    start = performance.now();
    await compress(grown, options, { measure: (messages) => fresh.measure(messages) });
    timings.remembered.push(performance.now() - start);
    tokenized.remembered.push(tokenizerStats.tokenized - before);
    // From scratch: nothing remembered anywhere, every text tokenized.
    forgetRememberedCounts();
    const scratch = new TokenCache('o200k_base', count);
    before = tokenizerStats.tokenized;
    start = performance.now();
    await compress(grown, options, { measure: (messages) => scratch.measure(messages) });
    timings.scratch.push(performance.now() - start);
    tokenized.scratch.push(tokenizerStats.tokenized - before);
    start = performance.now();
    await compress(grown, options);
    timings.estimate.push(performance.now() - start);
  }
  const cachedMs = median(timings.cached);
  const rememberedMs = median(timings.remembered);
  const scratchMs = median(timings.scratch);
  console.log(`decision per turn, median of ${repetitions}:`);
  console.log(`  tiktoken, cached counts                 ${cachedMs.toFixed(1)} ms   (goal <= 20 ms)`);
  console.log(`  tiktoken, new run, worker remembers     ${rememberedMs.toFixed(1)} ms   (${median(tokenized.remembered)} texts tokenized)`);
  console.log(
    `  tiktoken, from scratch                  ${scratchMs.toFixed(1)} ms   (${median(tokenized.scratch)} texts tokenized; ${(scratchMs / cachedMs).toFixed(1)}x the cached decision)`,
  );
  console.log(`  character estimate                      ${median(timings.estimate).toFixed(1)} ms`);
  result('compression: decision on a 200k-token history, cached counts (ms)', cachedMs, '≤ 20', cachedMs <= 20);
  result("compression: the same, a new run's empty cache, counts the worker remembers (ms)", rememberedMs, '');
  result('compression: the same, from scratch, every text tokenized (ms)', scratchMs, '');
}

void main();
