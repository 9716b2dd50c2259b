/**
 * bench/eval: what an eval suite costs per case (docs/eval.md). 100 runs of the `triage` fixture
 * (each a tool call and an answer) are started fresh at once on one worker and timed to their
 * end: cases per second, the baseline. Then a suite of the same 100 runs, read back from the
 * server by a query, each case its run again with its tool answered from the record and scored
 * (`sameAsRecorded`), at concurrency 100: cases per second, and the ratio. Medians of 3 rounds.
 * Not a test: asserts nothing.
 *
 * Run: npx tsx bench/eval.ts   (env: BENCH_EVAL_CASES, default 100)
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { Registry } from '../src/registry';
import { runSuite } from '../src/ops/eval-suite';
import { startBenchServer, startBenchWorker } from './harness';
import { median, result } from './report';

const CASES = Number(process.env.BENCH_EVAL_CASES ?? 100);
const ROUNDS = 3;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-eval-'));
  process.env.KEEL_TEST_DIR = dir;
  const agents = await import('../test/fixtures/eval-agents');
  const server = await startBenchServer();
  const { client, temporalClient, stop } = await startBenchWorker(server, new Registry().addModuleExports(agents), {
    worker: { maxConcurrentActivityTaskExecutions: 200 },
  });
  try {
    const fresh: number[] = [];
    const suite: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const prefix = `bench-eval-${round}`;
      let started = performance.now();
      const runs = await Promise.all(Array.from({ length: CASES }, (_, index) => client.start('triage', `where is order ${index + 1}?`, { idPrefix: prefix })));
      await Promise.all(runs.map((run) => run.result()));
      fresh.push(CASES / ((performance.now() - started) / 1000));

      // Visibility catches up with the runs' ends a moment later: the query must list them all.
      const query = `WorkflowId STARTS_WITH '${prefix}-' AND ExecutionStatus = 'Completed'`;
      while ((await temporalClient.workflow.count(query)).count < CASES) await new Promise((resolve) => setTimeout(resolve, 100));
      const path = join(dir, `suite-${round}.yaml`);
      writeFileSync(
        path,
        stringify({
          name: `bench-${round}`,
          concurrency: 100,
          scorers: [{ sameAsRecorded: true }],
          cases: [{ name: 'run', query: `WorkflowId STARTS_WITH '${prefix}-'`, limit: CASES }],
        }),
      );
      started = performance.now();
      const report = await runSuite(client, path);
      suite.push(CASES / ((performance.now() - started) / 1000));
      const passed = report.variants[0]!.passed;
      if (passed !== CASES)
        throw new Error(
          `the suite passed ${passed} of ${CASES} cases (${report.cases.length} run): ${JSON.stringify(report.cases.find((entry) => !entry.passed))}`,
        );
      console.log(`round ${round + 1}: fresh ${fresh.at(-1)!.toFixed(1)} runs/s, suite ${suite.at(-1)!.toFixed(1)} cases/s (${passed}/${CASES} passed)`);
    }
    result(`eval: ${CASES} recorded cases on one worker (cases/s, median of ${ROUNDS})`, median(suite), '');
    result(`the same ${CASES} runs started fresh (runs/s, median)`, median(fresh), 'baseline');
    result('eval / fresh (throughput)', median(suite) / median(fresh), 'reading the cases and scoring them: the difference');
  } finally {
    await stop();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
