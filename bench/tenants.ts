/**
 * bench/tenants: what one tenant's flood does to another tenant's chat (docs/tenants.md, "Fair
 * shares"). Tenant A starts 100 runs at once, each starting 5 background sub-agents; tenant B,
 * meanwhile, sends 10 chat turns (session turns), one every 300 ms. Every model call of both goes
 * to one rate-limited model's queue (2 calls at a time on the one worker, 40 ms each), so A's
 * flood is a backlog there and on the workflow task queue. Measured for each of B's turns: from
 * the send to the turn's first model call starting. Three phases on one dev server (fairness
 * on, as keel starts it): B alone; B during A's flood with keel's Priority (B's turns priority 1
 * and key "B", A's runs 3 and background tasks 4 under key "A"); and the same flood with no
 * tenants (a worker and client whose every kind of work has priority 3, and no fairness key: what
 * keel did before), B's turns sessions as before.
 * Medians and p95. Not a test: asserts nothing.
 *
 * Run: npx tsx bench/tenants.ts   (env: BENCH_TENANTS_RUNS, default 100)
 */
import { Context } from '@temporalio/activity';
import { randomUUID } from 'node:crypto';
import { GENERATE_WORKFLOW } from '../src/core/protocol';
import { defineAgent } from '../src/define';
import { agents } from '../src/features/agents/agents';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { percentile, sleep, startBenchServer, startBenchWorker } from './harness';
import { median, result } from './report';

const RUNS = Number(process.env.BENCH_TENANTS_RUNS ?? 100);
const SUBS = 5;
const TURNS = 10;
const CALL_MS = 40;

/** When each run's first model call started (performance.now()), by workflow id. */
const firstCall = new Map<string, number>();
const model = Object.assign(
  scriptedModel({
    name: 'scripted/tenant-shared',
    keepRequests: 0,
    script: (request) => {
      const id = Context.current().info.workflowExecution?.workflowId ?? '';
      if (!firstCall.has(id)) firstCall.set(id, performance.now());
      const last = request.messages.at(-1);
      const flood = last?.role === 'user' && JSON.stringify(last.content).includes('flood');
      if (!flood) return textReply('ok', { delayMs: CALL_MS });
      const delegate = Array.from({ length: SUBS }, (_, index) => ({ name: 'delegate_to_flood_sub', input: { task: `part ${index}`, background: true } }));
      return toolCallReply(delegate, { delayMs: CALL_MS });
    },
  }),
  { rateLimit: { concurrency: 2 } },
);
const registry = new Registry().add(
  model,
  defineAgent({ name: 'flood_sub', description: 'Does a part.', model: model.name }),
  defineAgent({ name: 'flood', model: model.name, use: [agents({ agents: ['flood_sub'], async: true })] }),
  defineAgent({ name: 'chat', model: model.name, session: 'server' }),
  defineAgent({ name: 'plain', model: model.name }),
);

/** Every kind of work at one priority: what keel did before it had fair shares. */
const FLAT = { priority: { interactive: 3, run: 3, background: 3, eval: 3, fork: 3 } };

async function main(): Promise<void> {
  const server = await startBenchServer();
  const keyed = await startBenchWorker(server, registry);
  const flat = await startBenchWorker(server, registry, { fairness: FLAT });
  type Side = typeof keyed;
  /** B's 10 chat turns, one every 300 ms: ms from each send to its run's first model call. */
  const bTurns = async ({ client }: Side, tenants: boolean): Promise<number[]> =>
    Promise.all(
      Array.from({ length: TURNS }, async (_, index) => {
        await sleep(index * 300);
        const began = performance.now();
        const { runId } = await client.session('chat', `b-${randomUUID()}`, tenants ? { tenant: 'B', owner: 'bob' } : {}).send('hello');
        return firstCall.get(runId)! - began;
      }),
    );
  /** A's flood: RUNS runs, each starting SUBS background sub-agents; resolves when all of them have closed. */
  const flood = async ({ client, temporalClient }: Side, tenants: boolean): Promise<{ done: Promise<void> }> => {
    const handles = await Promise.all(Array.from({ length: RUNS }, () => client.start('flood', 'flood', tenants ? { tenant: 'A', owner: 'alice' } : {})));
    const done = (async () => {
      await Promise.all(handles.map((handle) => handle.result()));
      // The sub-agents outlive their parents: wait for no generate run to be open (B's chats stay open, waiting for turns).
      while ((await temporalClient.workflow.count(`WorkflowType="${GENERATE_WORKFLOW}" AND ExecutionStatus="Running"`)).count > 0) await sleep(250);
    })();
    return { done };
  };
  /** B's turns during A's flood on `side`, and how long the flood took to drain. */
  const during = async (side: Side, tenants: boolean): Promise<{ waits: number[]; drainedS: number }> => {
    const began = performance.now();
    const a = await flood(side, tenants);
    await sleep(500);
    const waits = await bTurns(side, tenants);
    await a.done;
    return { waits, drainedS: (performance.now() - began) / 1000 };
  };
  const show = (label: string, waits: number[]) =>
    console.log(`${label}: median ${median(waits).toFixed(0)} ms, p95 ${percentile(waits, 95).toFixed(0)} ms (${waits.map((ms) => ms.toFixed(0)).join(', ')})`);
  try {
    await bTurns(keyed, true); // warm up
    await bTurns(flat, false);
    const alone = await bTurns(keyed, true);
    show('B alone', alone);
    const withKeys = await during(keyed, true);
    show(`B during A's flood, with keys (the flood drained in ${withKeys.drainedS.toFixed(1)} s)`, withKeys.waits);
    const aloneFlat = await bTurns(flat, false);
    show('B alone, no keys', aloneFlat);
    const noKeys = await during(flat, false);
    show(`B during the same flood, no keys (drained in ${noKeys.drainedS.toFixed(1)} s)`, noKeys.waits);

    const ratio = percentile(withKeys.waits, 95) / percentile(alone, 95);
    result("tenants: B's p95 send to first model call during A's flood / alone, with keys", ratio, '≤ 2', ratio <= 2);
    result("tenants: B's p95 send to first model call during A's flood / alone, no keys", percentile(noKeys.waits, 95) / percentile(aloneFlat, 95), 'reported');
    result("tenants: B's median send to first model call during A's flood, with keys / no keys", median(withKeys.waits) / median(noKeys.waits), 'reported');
  } finally {
    await flat.stop({ server: false });
    await keyed.stop();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
