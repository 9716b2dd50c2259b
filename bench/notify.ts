/**
 * bench/notify: how soon a webhook hears of a hold (docs/notify.md). 100 runs of an agent whose
 * one tool call ToolApproval holds are started at once, on one worker with one webhook (a local
 * receiver); for each run, the time from its hold being raised (the hold's `since`, the run's
 * clock) to the webhook receiving its `hold.raised` notice. Then the same with the webhook down
 * for its first attempt of each (503): what a retry costs. Not a test: prints figures, asserts nothing.
 *
 * Run: npx tsx bench/notify.ts   (env: BENCH_NOTIFY_HOLDS, default 100)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from '../src/registry';
import * as agents from '../test/fixtures/notify-agents';
import { percentile, startBenchServer, startBenchWorker } from './harness';
import { median, result } from './report';

const HOLDS = Number(process.env.BENCH_NOTIFY_HOLDS ?? 100);

async function main(): Promise<void> {
  // The receiver notes when each run's hold.raised arrived; while `refuseFirst`, each notice's first attempt gets 503.
  const arrived = new Map<string, { at: number; since: string }>();
  const tried = new Set<string>();
  let refuseFirst = false;
  const receiver = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const notice = JSON.parse(body) as { id: string; type: string; runId: string; hold: { since: string } };
      if (refuseFirst && !tried.has(notice.id)) {
        tried.add(notice.id);
        return void response.writeHead(503).end();
      }
      if (notice.type === 'hold.raised' && !arrived.has(notice.runId)) arrived.set(notice.runId, { at: Date.now(), since: notice.hold.since });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  process.env.KEEL_BENCH_HOOK_SECRET = 'bench-notify-secret-0123456789';
  const server = await startBenchServer();
  const bench = await startBenchWorker(server, new Registry().addModuleExports(agents), {
    notify: [{ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, secret: 'KEEL_BENCH_HOOK_SECRET' }],
    worker: { maxConcurrentActivityTaskExecutions: 200 },
  });

  const round = async (label: string, goal: string, met: (p95: number) => boolean) => {
    const runIds = (await Promise.all(Array.from({ length: HOLDS }, () => bench.client.start('notify-held', 'invoice acme')))).map((run) => run.runId);
    const deadline = Date.now() + 5 * 60_000;
    while (runIds.some((runId) => !arrived.has(runId)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    const delays = runIds.flatMap((runId) => {
      const seen = arrived.get(runId);
      return seen ? [seen.at - Date.parse(seen.since)] : [];
    });
    console.log(
      `${label}: ${delays.length} of ${HOLDS} notices; median ${median(delays).toFixed(0)} ms, p95 ${percentile(delays, 95).toFixed(0)} ms, max ${Math.max(...delays).toFixed(0)} ms`,
    );
    result(`${label}: hold raised to webhook POST, p95 ms (${HOLDS} holds at once)`, percentile(delays, 95), goal, met(percentile(delays, 95)));
    await Promise.all(runIds.map((runId) => bench.client.getHandle(runId).decide({ interruptId: 'i1', approved: false, decidedBy: 'bench' })));
  };
  await round('webhook up', '≤ 1000', (p95) => p95 <= 1000);
  refuseFirst = true;
  await round('webhook refusing each first attempt', '', () => true);

  await bench.stop();
  receiver.close();
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
