/**
 * bench/fork: forking the last turn of a long run (docs/fork.md). A run of N turns (default
 * 1,000) whose tool returns 20 KiB each turn, on keel's defaults (file External Storage,
 * continue-as-new past 4 MiB of history), so its chain continued as new many times. Then, five
 * times each, paired: a fork at its last turn with a message (`RunHandle.fork`), and the same
 * conversation started fresh as a new run's messages (`client.start`, what a client without
 * forks does). For each: the time until the new run has started (the call returns), and the
 * bytes it added to the payload store. Medians. Not a test: asserts nothing.
 *
 * Run: npx tsx bench/fork.ts   (env: BENCH_FORK_TURNS)
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineAgent } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { chunkTool, storedBytes, startBenchServer, startBenchWorker } from './harness';
import { median, result } from './report';

const TURNS = Number(process.env.BENCH_FORK_TURNS ?? 1000);
const ROUNDS = 5;

async function main(): Promise<void> {
  const server = await startBenchServer();
  const store = mkdtempSync(join(tmpdir(), 'keel-bench-fork-store-'));
  // Each turn calls `chunk` until the last, which answers; a later call (a fork's) answers at once.
  const model = scriptedModel({
    name: 'scripted/long-fork',
    keepRequests: 0,
    script: (request) => {
      const turns = request.messages.filter((message) => message.role === 'model').length;
      return turns < TURNS ? toolCallReply({ name: 'chunk', input: { turn: turns } }, { usage: { inputTokens: 1 } }) : textReply('done');
    },
  });
  const registry = new Registry().add(chunkTool, model, defineAgent({ name: 'long-fork', model: model.name, tools: ['chunk'], maxTurns: TURNS + 10 }));
  const { client, temporalClient, stop } = await startBenchWorker(server, registry, { externalStorage: { directory: store } });
  try {
    const began = Date.now();
    const source = await client.start('long-fork', 'go');
    await source.result();
    let chain = 0;
    for await (const _ of temporalClient.workflow.list({ query: `WorkflowId = "${source.runId}"` })) chain++;
    const conversation = await source.messages(0);
    const conversationBytes = Buffer.byteLength(JSON.stringify(conversation));
    console.log(
      `source: ${TURNS} turns in ${((Date.now() - began) / 1000).toFixed(0)} s, ${chain} runs in its chain, conversation ${(conversationBytes / 1024 / 1024).toFixed(1)} MiB, store ${(storedBytes(store) / 1024 / 1024).toFixed(1)} MiB`,
    );
    // The run's last turn is its answer (turn N + 1, after N tool turns); the turn before it is read by a query of the finished run, which replays it.
    const last = TURNS + 1;
    const forkMs: number[] = [];
    const beforeLastMs: number[] = [];
    const forkBytes: number[] = [];
    const freshMs: number[] = [];
    const freshBytes: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      let before = storedBytes(store);
      let started = performance.now();
      const { handle: fork } = await source.fork({ at: last, message: `and now, ${round}?` });
      forkMs.push(performance.now() - started);
      forkBytes.push(storedBytes(store) - before);
      await fork.result();
      started = performance.now();
      await (await source.fork({ at: TURNS, message: `and before, ${round}?` })).handle.result();
      beforeLastMs.push(performance.now() - started);

      before = storedBytes(store);
      started = performance.now();
      const fresh = await client.start('long-fork', [...conversation.slice(1), { role: 'user', content: [{ text: `and now, ${round}?` }] }]);
      freshMs.push(performance.now() - started);
      freshBytes.push(storedBytes(store) - before);
      await fresh.result();
    }
    console.log(
      `fork at turn ${TURNS}: started in ${forkMs.map((ms) => ms.toFixed(0)).join(', ')} ms; store +${forkBytes.map((bytes) => (bytes / 1024).toFixed(0)).join(', ')} KiB`,
    );
    console.log(
      `fresh run, same conversation: started in ${freshMs.map((ms) => ms.toFixed(0)).join(', ')} ms; store +${freshBytes.map((bytes) => (bytes / 1024).toFixed(0)).join(', ')} KiB`,
    );
    result(`fork: last turn of a ${last}-turn run, started (ms, median of ${ROUNDS})`, median(forkMs), '≤ 1000', median(forkMs) <= 1000);
    result(`fork: turn ${TURNS} (a query replays the finished run), started and finished (ms, median)`, median(beforeLastMs), '');
    result(
      'fork: store bytes added (KiB, median)',
      median(forkBytes) / 1024,
      `no large payload copied (conversation ${(conversationBytes / 1024).toFixed(0)} KiB)`,
      median(forkBytes) < 256 * 1024,
    );
    result('fresh run with the same conversation: started (ms, median)', median(freshMs), 'baseline');
    result('fresh run with the same conversation: store bytes added (KiB, median)', median(freshBytes) / 1024, 'baseline');
    result('fork / fresh: start time', median(forkMs) / median(freshMs), '');
  } finally {
    await stop();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
