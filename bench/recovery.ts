/**
 * bench/recovery: time from SIGKILL of a worker in the middle of a tool call to the call
 * running again on the other worker (goal ≤ heartbeat timeout + 1 s). Two real `keel
 * worker` processes, the embedded dev server, REPS repetitions; prints each and the median.
 * Not a test.
 *
 * Run: npx tsx bench/recovery.ts   (env: BENCH_RECOVERY_REPS, BENCH_HEARTBEAT_S)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { sleep, startBenchServer } from './harness';
import { result } from './report';

const REPS = Number(process.env.BENCH_RECOVERY_REPS ?? 5);
const HEARTBEAT_S = Number(process.env.BENCH_HEARTBEAT_S ?? 2);
const ROOT = resolve(__dirname, '..');

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

async function until<T>(probe: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(20);
  }
}

function worker(configPath: string, dir: string): { child: ChildProcess; ready: Promise<void> } {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'keel.cjs'), 'worker', '--config', configPath], {
    env: { ...process.env, KEEL_TEST_DIR: dir },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  const ready = new Promise<void>((done) =>
    child.stderr.on('data', (chunk: Buffer) => ((output += chunk.toString()), /keel: worker \d+ on task queue/.test(output) && done())),
  );
  return { child, ready };
}

/** A pending activity as describe reports it: the fields that say where recovery's time goes. */
interface PendingSeen {
  state: string;
  attempt: number;
  lastHeartbeat?: number;
  lastStarted?: number;
  scheduled?: number;
}

const millis = (time: { seconds?: unknown; nanos?: number | null } | null | undefined): number | undefined =>
  time?.seconds === undefined || time.seconds === null ? undefined : Number(time.seconds) * 1000 + Math.floor((time.nanos ?? 0) / 1e6);

/**
 * Describes the run every 50 ms from the kill on and records each change of its pending tool
 * activity (state, attempt, last heartbeat, next scheduled attempt), as times from the kill:
 * where the time between SIGKILL and the call's next start goes.
 */
function watchPendingTool(workflow: WorkflowHandle, killedAt: number): { stop: () => Promise<string[]> } {
  const seen: string[] = [];
  let last = '';
  let stopped = false;
  const at = (ms: number | undefined) => (ms === undefined ? '-' : `${((ms - killedAt) / 1000).toFixed(2)} s`);
  const done = (async () => {
    while (!stopped) {
      const description = await workflow.describe().catch(() => undefined);
      const pending = description?.raw.pendingActivities?.find((activity) => activity.activityType?.name === 'callTool');
      if (pending) {
        const now: PendingSeen = {
          state: temporal.api.enums.v1.PendingActivityState[pending.state ?? 0] ?? String(pending.state),
          attempt: pending.attempt ?? 0,
          lastHeartbeat: millis(pending.lastHeartbeatTime),
          lastStarted: millis(pending.lastStartedTime),
          scheduled: millis(pending.scheduledTime),
        };
        const key = JSON.stringify(now);
        if (key !== last) {
          last = key;
          seen.push(
            `at ${at(Date.now())}: state ${now.state}, attempt ${now.attempt}, last heartbeat ${at(now.lastHeartbeat)}, last started ${at(now.lastStarted)}, scheduled ${at(now.scheduled)}`,
          );
        }
      }
      await sleep(50);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await done;
      return seen;
    },
  };
}

async function main(): Promise<void> {
  const server = await startBenchServer();
  const times: number[] = [];
  try {
    for (let rep = 0; rep < REPS; rep++) {
      const dir = mkdtempSync(join(tmpdir(), 'keel-recovery-'));
      const configPath = join(dir, 'temporal.yaml');
      writeFileSync(
        configPath,
        stringify({
          temporal: { address: server.address },
          taskQueue: `recovery-${rep}-${Date.now()}`,
          activities: { tool: { heartbeatTimeout: `${HEARTBEAT_S} seconds`, retry: { initialInterval: '100ms' } } },
          modules: [join(ROOT, 'test', 'fixtures', 'crash-agents.ts')],
          models: [{ name: 'scripted/crash', script: [{ toolRequests: [{ name: 'slow_work', input: { seconds: 3 } }] }, { text: 'done' }] }],
        }),
      );
      const workers = [worker(configPath, dir), worker(configPath, dir)];
      await Promise.all(workers.map((entry) => entry.ready));
      const client = await KeelClient.connect(loadConfig({ path: configPath }));
      try {
        const handle = await client.start('crash', 'go');
        const slowLog = join(dir, 'slow.log');
        const victimPid = await until(() => lines(slowLog)[0]?.split(' ')[1]);
        const victim = workers.find((entry) => String(entry.child.pid) === victimPid)!;
        victim.child.kill('SIGKILL');
        const killedAt = Date.now();
        const timeline = watchPendingTool(client.temporal.workflow.getHandle(handle.runId), killedAt);
        await until(() => (lines(slowLog).filter((line) => line.startsWith('start ')).length >= 2 ? true : undefined));
        times.push((Date.now() - killedAt) / 1000);
        const seen = await timeline.stop();
        await handle.result();
        console.log(`recovery ${rep + 1}/${REPS}: the call ran again ${times.at(-1)!.toFixed(2)} s after SIGKILL (heartbeat timeout ${HEARTBEAT_S} s)`);
        for (const line of seen) console.log(`    ${line}`);
      } finally {
        await client.close();
        for (const entry of workers) entry.child.kill('SIGKILL');
      }
    }
    const sorted = [...times].sort((a, b) => a - b);
    const recovered = sorted[Math.floor(sorted.length / 2)]!;
    result(`recovery: SIGKILL to the call running again (s), heartbeat ${HEARTBEAT_S} s`, recovered, `≤ ${HEARTBEAT_S + 1}`, recovered <= HEARTBEAT_S + 1);
  } finally {
    await server.stop();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
