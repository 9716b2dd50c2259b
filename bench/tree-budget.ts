/**
 * bench/tree-budget: what one budget for the tree costs a sub-agent. An orchestrator delegates
 * to a sub-agent that makes N model calls (a trivial tool between them), with and without a
 * Budget on the orchestrator; with it, each of the sub-agent's calls is asked of the root's
 * ledger first (an activity) and told to it after (a signal). Interleaved repetitions, medians,
 * their ratio and the extra time per sub-agent model call. Not a test: prints figures.
 *
 * Run: npx tsx bench/tree-budget.ts   (env: BENCH_TURNS, BENCH_REPS)
 */
import { z } from 'zod';
import { defineAgent, defineTool } from '../src/define';
import { agents } from '../src/features/agents/agents';
import { budget } from '../src/features/budget/budget';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { startBenchServer, startBenchWorker } from './harness';
import { median, result } from './report';

const TURNS = Number(process.env.BENCH_TURNS ?? 10);
const REPS = Number(process.env.BENCH_REPS ?? 7);

async function main(): Promise<void> {
  const noop = defineTool({ name: 'noop', description: 'Does nothing.', input: z.object({ turn: z.number() }), run: () => ({ ok: true }) });
  // The sub-agent: TURNS calls asking for noop, then its answer (every call spends 1 token).
  const sub = scriptedModel({
    name: 'scripted/bench-sub',
    script: (request) => {
      const turn = request.messages.filter((message) => message.role === 'tool').length;
      return turn < TURNS
        ? toolCallReply({ name: 'noop', input: { turn } }, { usage: { totalTokens: 1 } })
        : textReply('sub done', { usage: { totalTokens: 1 } });
    },
  });
  const root = scriptedModel({
    name: 'scripted/bench-root',
    script: (request) =>
      request.messages.some((message) => message.role === 'tool')
        ? textReply('done')
        : toolCallReply({ name: 'delegate_to_bench-sub', input: { task: 'work' } }),
  });
  const registry = new Registry().add(
    noop,
    sub,
    root,
    defineAgent({ name: 'bench-sub', description: 'Works.', model: sub.name, tools: [noop], maxTurns: TURNS + 1 }),
    defineAgent({ name: 'bench-plain', model: root.name, use: [agents({ agents: ['bench-sub'] })] }),
    defineAgent({ name: 'bench-budgeted', model: root.name, use: [budget({ limit: { totalTokens: 1_000_000 } }), agents({ agents: ['bench-sub'] })] }),
  );
  const server = await startBenchServer();
  const bench = await startBenchWorker(server, registry);
  try {
    const timed = async (agent: string) => {
      const started = performance.now();
      await bench.client.run(agent, 'go');
      return performance.now() - started;
    };
    // Warm up (bundle, caches), then interleave.
    await timed('bench-plain');
    await timed('bench-budgeted');
    const plain: number[] = [];
    const budgeted: number[] = [];
    for (let rep = 0; rep < REPS; rep++) {
      plain.push(await timed('bench-plain'));
      budgeted.push(await timed('bench-budgeted'));
    }
    const [p, b] = [median(plain), median(budgeted)];
    result(`tree budget: orchestrator + ${TURNS + 1}-call sub-agent, no budget (ms)`, p, '');
    result(`tree budget: the same with a Budget on the orchestrator (ms)`, b, '');
    result('tree budget: with / without', b / p, '');
    result('tree budget: extra per sub-agent model call (ms)', (b - p) / (TURNS + 1), '');
  } finally {
    await bench.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
