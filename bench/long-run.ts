/**
 * bench/long-run: a run of N turns (default 1,000) whose tool returns 20 KiB each turn, on
 * the embedded dev server with keel's defaults (file External Storage, continue-as-new past
 * 4 MiB of history). Prints each run of the chain (history bytes, events), the store's bytes,
 * and the same for N/4 and N/2 turns, to show growth in turns. Not a test: asserts nothing.
 *
 * Run: npx tsx bench/long-run.ts   (env: BENCH_LONG_TURNS)
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineAgent } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { chunkTool, storedBytes, historyBytes, startBenchServer, startBenchWorker } from './harness';
import { result } from './report';

const TURNS = Number(process.env.BENCH_LONG_TURNS ?? 1000);

async function main(): Promise<void> {
  const server = await startBenchServer();
  const store = mkdtempSync(join(tmpdir(), 'keel-bench-store-'));
  const registry = new Registry().add(chunkTool);
  const counts = [TURNS / 4, TURNS / 2, TURNS].map(Math.round);
  for (const turns of counts) {
    const model = scriptedModel({
      name: `scripted/long-${turns}`,
      keepRequests: 0,
      script: [
        ...Array.from({ length: turns }, (_, turn) => toolCallReply({ name: 'chunk', input: { turn } }, { usage: { inputTokens: 1 } })),
        textReply('done'),
      ],
    });
    registry.add(model, defineAgent({ name: `long-${turns}`, model: model.name, tools: ['chunk'], maxTurns: turns }));
  }
  const { client, temporalClient, stop } = await startBenchWorker(server, registry, { externalStorage: { directory: store } });
  try {
    const rows: Array<{ turns: number; seconds: number; runs: number; maxHistory: number; totalHistory: number; store: number }> = [];
    for (const turns of counts) {
      const before = storedBytes(store);
      const started = Date.now();
      const handle = await client.start(`long-${turns}`, 'go');
      const outcome = await handle.result();
      const seconds = (Date.now() - started) / 1000;
      if (outcome.usage.inputTokens !== turns) throw new Error(`usage not summed: ${JSON.stringify(outcome.usage)}`);
      const histories: number[] = [];
      for await (const execution of temporalClient.workflow.list({ query: `WorkflowId = "${handle.runId}"` })) {
        histories.push(await historyBytes(temporalClient, handle.runId, execution.runId));
      }
      const row = {
        turns,
        seconds,
        runs: histories.length,
        maxHistory: Math.max(...histories),
        totalHistory: histories.reduce((a, b) => a + b, 0),
        store: storedBytes(store) - before,
      };
      rows.push(row);
      console.log(
        `long run: ${turns} turns in ${seconds.toFixed(1)} s, ${row.runs} runs in the chain, history per run max ${(row.maxHistory / 1024 / 1024).toFixed(2)} MiB (all runs ${(row.totalHistory / 1024 / 1024).toFixed(1)} MiB), store +${(row.store / 1024 / 1024).toFixed(1)} MiB`,
      );
    }
    const last = rows.at(-1)!;
    const half = rows[1]!;
    result('long run: turns', last.turns, '1,000 turns complete');
    result('long run: largest history of one run (MiB)', last.maxHistory / 1024 / 1024, '≤ 5', last.maxHistory / 1024 / 1024 <= 5);
    result('long run: runs in the chain', last.runs, '');
    result('long run: history bytes per turn (KiB)', last.totalHistory / last.turns / 1024, 'constant');
    result('long run: store bytes per turn (KiB)', last.store / last.turns / 1024, 'constant (linear in turns)');
    result(`long run: store ${last.turns} turns / ${half.turns} turns`, last.store / half.store, '≈ 2 (linear)');
    result('long run: wall time (s)', last.seconds, '');
  } finally {
    await stop();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
