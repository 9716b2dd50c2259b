/**
 * bench/chat: what the AI SDK chat endpoint adds to a keel run (docs/chat.md). A session agent
 * streams its answer in 20 pieces 100 ms apart (the worker's heartbeat throttle at 100 ms, as
 * docs/chat.md advises for a chat). Each round sends one turn through `/api/chat` (read with the
 * AI SDK's `DefaultChatTransport`) and one with `KeelClient` directly (the session's `send`, then
 * the run's events), the order alternating, and times each to its first streamed text and to
 * its end; the figure is the median over rounds of the chat's time less the direct one's. Then,
 * with a turn under way, the time for a page that dropped its stream to reattach: from the
 * resume request to the first text it is sent. Not a test: prints figures, asserts nothing.
 *
 * Run: npx tsx bench/chat.ts   (env: BENCH_CHAT_ROUNDS, default 15)
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DefaultChatTransport, type UIMessageChunk } from 'ai';
import { stringify } from 'yaml';
import { loadConfig } from '../src/config/load';
import { Registry } from '../src/registry';
import { startUiServer } from '../src/ui/server';
import * as agents from './protocol-agents';
import { startBenchServer, startBenchWorker } from './harness';
import { median, result } from './report';

const ROUNDS = Number(process.env.BENCH_CHAT_ROUNDS ?? 15);

/** Reads `stream` to its end; when its first text arrived and when it ended, from `started`. */
async function timed(stream: ReadableStream<UIMessageChunk>, started: number, { stopAtText = false } = {}): Promise<{ first: number; end: number }> {
  let first = Number.NaN;
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (value.type === 'text-delta' && Number.isNaN(first)) {
      first = performance.now() - started;
      if (stopAtText) {
        await reader.cancel();
        break;
      }
    }
  }
  return { first, end: performance.now() - started };
}

async function main(): Promise<void> {
  const server = await startBenchServer();
  const bench = await startBenchWorker(server, new Registry().addModuleExports(agents), { worker: { maxHeartbeatThrottleInterval: '100 milliseconds' } });
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-chat-'));
  const configPath = join(dir, 'temporal.yaml');
  writeFileSync(
    configPath,
    stringify({
      temporal: { address: server.address },
      taskQueue: bench.client.taskQueue,
      server: { enabled: false },
      modules: [join(__dirname, 'protocol-agents.ts')],
      serve: { agents: ['bench-chat'] },
    }),
  );
  const ui = await startUiServer({ config: loadConfig({ path: configPath }), port: 0 });
  const transport = new DefaultChatTransport({ api: `${ui.origin}/api/chat/bench-chat` });
  const send = (chatId: string, signal?: AbortSignal) =>
    transport.sendMessages({
      chatId,
      messages: [{ id: randomUUID(), role: 'user', parts: [{ type: 'text', text: 'go' }] }],
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: signal,
    });
  const ways = {
    chat: async () => {
      const started = performance.now();
      return timed(await send(`bench-${randomUUID()}`), started);
    },
    direct: async () => {
      const started = performance.now();
      const turn = await bench.client.session('bench-chat', `bench-${randomUUID()}`).send('go', { detach: true });
      let first = Number.NaN;
      for await (const event of bench.client.getHandle(turn.runId).events()) {
        if (event.type === 'text' && Number.isNaN(first)) first = performance.now() - started;
        if (event.type === 'end') break;
      }
      return { first, end: performance.now() - started };
    },
  };
  const added = { first: [] as number[], end: [] as number[] };
  const direct = { first: [] as number[], end: [] as number[] };
  for (let round = -2; round < ROUNDS; round++) {
    const order = round % 2 ? (['chat', 'direct'] as const) : (['direct', 'chat'] as const);
    const ms: Record<string, { first: number; end: number }> = {};
    for (const name of order) ms[name] = await ways[name]();
    if (round < 0) continue;
    direct.first.push(ms.direct!.first);
    direct.end.push(ms.direct!.end);
    added.first.push(ms.chat!.first - ms.direct!.first);
    added.end.push(ms.chat!.end - ms.direct!.end);
  }
  console.log(`direct: first text ${median(direct.first).toFixed(0)} ms, whole turn ${median(direct.end).toFixed(0)} ms (median of ${ROUNDS} rounds)`);
  result(
    `chat endpoint: time to first streamed text added to the direct client's, ms (median of ${ROUNDS} rounds)`,
    median(added.first),
    '≤ 50',
    median(added.first) <= 50,
  );
  result(`chat endpoint: whole turn added, ms (median of ${ROUNDS} rounds)`, median(added.end), '');

  // A page that dropped its stream mid-answer comes back: from its resume request to the first text it is sent.
  const reattach: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const chatId = `bench-${randomUUID()}`;
    const drop = new AbortController();
    await timed(await send(chatId, drop.signal), performance.now(), { stopAtText: true });
    drop.abort();
    const started = performance.now();
    const resumed = await transport.reconnectToStream({ chatId });
    if (!resumed) throw new Error('the turn ended before the page came back');
    reattach.push((await timed(resumed, started, { stopAtText: true })).first);
  }
  result(`chat endpoint: a reloaded page's resume to its first text, ms (median of ${ROUNDS})`, median(reattach), '≤ 300', median(reattach) <= 300);

  await ui.close();
  await bench.stop();
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
