/**
 * bench/ledger: what a tenant's spend ledger costs a run, and whether it stays exact while
 * workers die (docs/tenants.md, "Spend per tenant"). Real `keel worker` processes of
 * test/fixtures/spend-agents.ts on the embedded dev server.
 *
 * 1. Wall time of a 3-turn run (two tool rounds, then the answer) with a Budget of scope tenant
 *    (a charge per model call, a read before the first) against the same run with a run-scoped
 *    Budget (no ledger): ROUNDS rounds of 20 runs each, one at a time, interleaved; medians.
 *    Goal: ≤ 1.10.
 * 2. RUNS runs of one tenant, 50 at a time, on two workers, one of which is SIGKILLed and
 *    replaced every 15 s: the ledger's totals against the sum of the runs' own usage. Goal: equal.
 *
 * Run: npx tsx bench/ledger.ts   (env: BENCH_LEDGER_RUNS, default 1000; BENCH_LEDGER_ROUNDS, default 5, 0
 * skips part 1; BENCH_LEDGER_KILL_EVERY_MS, default 15000)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { spendLedgerId, spendQuery } from '../src/features/budget/spend-door';
import { sleep, startBenchServer } from './harness';
import { median, result } from './report';

const RUNS = Number(process.env.BENCH_LEDGER_RUNS ?? 1000);
const ROUNDS = Number(process.env.BENCH_LEDGER_ROUNDS ?? 5);
const PER_ROUND = 20;
/** How often a worker is SIGKILLed (and replaced) while the runs go. */
const KILL_EVERY_MS = Number(process.env.BENCH_LEDGER_KILL_EVERY_MS ?? 15_000);
const ROOT = resolve(__dirname, '..');

function worker(configPath: string): { child: ChildProcess; ready: Promise<void> } {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'keel.cjs'), 'worker', '--config', configPath], {
    env: { ...process.env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  const ready = new Promise<void>((done) =>
    child.stderr.on('data', (chunk: Buffer) => ((output += chunk.toString()), /keel: worker \d+ on task queue/.test(output) && done())),
  );
  return { child, ready };
}

async function main(): Promise<void> {
  const server = await startBenchServer();
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-ledger-'));
  const configPath = join(dir, 'temporal.yaml');
  writeFileSync(
    configPath,
    stringify({
      temporal: { address: server.address },
      taskQueue: `bench-ledger-${randomUUID()}`,
      server: { enabled: false },
      modules: [join(ROOT, 'test', 'fixtures', 'spend-agents.ts')],
      worker: { stickyQueueScheduleToStartTimeout: '1 second' },
      activities: { tool: { startToCloseTimeout: '3 seconds', retry: { initialInterval: '200ms' } } },
    }),
  );
  const workers = [worker(configPath), worker(configPath)];
  await Promise.all(workers.map((one) => one.ready));
  const client = await KeelClient.connect(loadConfig({ path: configPath }));
  try {
    // 1. The ledger's cost to one run: tenant-scoped against run-scoped, the same calls.
    const timed = async (agent: string, tenant: string) => {
      const began = performance.now();
      await client.run(agent, 'go', { tenant });
      return performance.now() - began;
    };
    for (let warm = 0; ROUNDS && warm < 5; warm++) await Promise.all([timed('roomy_spender', 'warm'), timed('run_spender', 'warm')]);
    const ledgered: number[] = [];
    const plain: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const tenant = `t-${round}`;
      for (let run = 0; run < PER_ROUND; run++) {
        ledgered.push(await timed('roomy_spender', tenant));
        plain.push(await timed('run_spender', tenant));
      }
    }
    if (ROUNDS) {
      console.log(`3-turn run: with the tenant ledger median ${median(ledgered).toFixed(1)} ms, with a run budget ${median(plain).toFixed(1)} ms`);
      result('ledger: 3-turn run wall time, tenant ledger / run budget', median(ledgered) / median(plain), '≤ 1.10', median(ledgered) / median(plain) <= 1.1);
    }

    // 2. RUNS runs of one tenant while workers die.
    const tenant = `kill-${randomUUID().slice(0, 8)}`;
    let next = 0;
    let kills = 0;
    const usages: number[] = [];
    let killing = true;
    const killer = (async () => {
      while (killing) {
        await sleep(KILL_EVERY_MS);
        if (!killing) break;
        const victim = workers.shift()!;
        victim.child.kill('SIGKILL');
        kills++;
        const fresh = worker(configPath);
        workers.push(fresh);
        await fresh.ready;
      }
    })();
    const began = performance.now();
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < RUNS) {
          next++;
          usages.push((await client.run('roomy_spender', 'go', { tenant })).usage.totalTokens ?? 0);
        }
      }),
    );
    killing = false;
    await killer;
    const report = await client.temporal.workflow.getHandle(spendLedgerId('tenant', tenant)).query(spendQuery);
    const counted = report.windows.reduce((sum, window) => sum + (window.usage.totalTokens ?? 0), 0);
    const spent = usages.reduce((sum, tokens) => sum + tokens, 0);
    console.log(
      `${RUNS} runs in ${((performance.now() - began) / 1000).toFixed(1)} s, ${kills} workers SIGKILLed: the runs spent ${spent} tokens, the ledger counted ${counted} in ${report.charges} charges (${report.repeats} sent again, not counted twice)`,
    );
    result(`ledger: tokens counted / spent over ${RUNS} runs, ${kills} workers killed`, counted / spent, '= 1', counted === spent);
  } finally {
    await client.close();
    for (const one of workers) one.child.kill('SIGKILL');
    await server.stop();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
