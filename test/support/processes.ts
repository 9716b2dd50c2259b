/** Runs `keel` as a real child process, capturing its output. */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { inject } from 'vitest';
import { stringify } from 'yaml';

/** The repository root. */
export const ROOT = resolve(__dirname, '..', '..');
/** The `keel` command of this checkout. */
export const BIN = join(ROOT, 'bin', 'keel.cjs');

/** A running keel process. */
export interface KeelProcess {
  child: ChildProcess;
  /** stdout and stderr, interleaved as they arrived. */
  output: () => string;
  stdout: () => string;
  stderr: () => string;
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<void>;
  exited: Promise<number | null>;
  kill: (signal?: NodeJS.Signals) => void;
}

/** Starts `keel <args>`. */
export function spawnKeel(args: string[], options: { env?: Record<string, string>; cwd?: string } = {}): KeelProcess {
  return spawnCommand(process.execPath, [BIN, ...args], { label: `keel ${args.join(' ')}`, ...options });
}

/** This process's environment with `env` over it; a variable set to undefined is removed. */
export function commandEnv(env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const merged: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete merged[key];
  return merged;
}

/** Starts any command (`label` names it in errors), capturing its output like `spawnKeel`. */
export function spawnCommand(
  command: string,
  args: string[],
  {
    env = {},
    cwd = ROOT,
    label = `${command} ${args.join(' ')}`,
    stdin = 'ignore',
  }: { env?: Record<string, string | undefined>; cwd?: string; label?: string; stdin?: 'ignore' | 'pipe' } = {},
): KeelProcess {
  const child = spawn(command, args, { cwd, env: commandEnv(env), stdio: [stdin, 'pipe', 'pipe'] });
  let output = '';
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    stdout += chunk.toString();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    stderr += chunk.toString();
  });
  // 'close' waits for the streams too, so the captured output is complete.
  const exited = new Promise<number | null>((done) => child.once('close', (code) => done(code)));
  return {
    child,
    output: () => output,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    kill: (signal = 'SIGTERM') => child.kill(signal),
    async waitFor(pattern, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(output)) {
        if (child.exitCode !== null) throw new Error(`${label} exited (${child.exitCode}) before printing ${pattern}:\n${output}`);
        if (Date.now() > deadline) throw new Error(`${label} did not print ${pattern} within ${timeoutMs} ms:\n${output}`);
        await new Promise((resolveTick) => setTimeout(resolveTick, 100));
      }
    },
  };
}

/**
 * Keeps the keel processes a test file starts and kills them after each test (call once
 * at the top level of the file); returns the function that registers one.
 */
export function killAfterEach(afterEachHook: (fn: () => Promise<void>) => void): (process: KeelProcess) => KeelProcess {
  const running: KeelProcess[] = [];
  afterEachHook(async () => {
    for (const process of running.splice(0)) {
      process.kill('SIGKILL');
      await process.exited;
    }
  });
  return (process) => {
    running.push(process);
    return process;
  };
}

/** Runs `keel <args>` to completion. */
export async function runKeel(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const keel = spawnKeel(args, options);
  const code = await keel.exited;
  return { code, stdout: keel.stdout(), stderr: keel.stderr() };
}

/**
 * Writes `temporal.yaml` in a new temp dir `keel-<prefix>-…` for keel processes on the shared dev
 * server: its address, task queue `<prefix>-<uuid>` unless `fields.taskQueue` is given, and
 * `worker.stickyQueueScheduleToStartTimeout: 1 second` under any `fields.worker`, then the rest of
 * `fields`. With `{ queue: false }` only the address is added (for a test that names a queue per
 * process with KEEL_TASK_QUEUE).
 */
export function writeTestConfig(
  prefix: string,
  { worker, ...fields }: { taskQueue?: string; worker?: Record<string, unknown>; [field: string]: unknown } = {},
  { queue = true }: { queue?: boolean } = {},
): { dir: string; configPath: string; taskQueue: string | undefined } {
  const dir = mkdtempSync(join(tmpdir(), `keel-${prefix}-`));
  const configPath = join(dir, 'temporal.yaml');
  const defaults = queue
    ? { taskQueue: `${prefix}-${randomUUID()}`, worker: { stickyQueueScheduleToStartTimeout: '1 second', ...worker } }
    : worker && { worker };
  const config = { temporal: { address: inject('temporalAddress') }, ...defaults, ...fields };
  writeFileSync(configPath, stringify(config));
  return { dir, configPath, taskQueue: config.taskQueue };
}

/**
 * temporal.yaml fields for the crash fixture (test/fixtures/crash-agents.ts): agent `crash`, whose
 * turn 1 calls record_fast and slow_work (4 s) at once and whose turn 2 answers "done"; tool calls
 * heartbeat every 2 s, so a worker killed mid-call is noticed at once.
 */
export const CRASH_AGENT_CONFIG = {
  activities: { tool: { startToCloseTimeout: '1 minute', heartbeatTimeout: '2 seconds', retry: { initialInterval: '200ms' } } },
  modules: [join(ROOT, 'test', 'fixtures', 'crash-agents.ts')],
  models: [
    {
      name: 'scripted/crash',
      script: [
        {
          toolRequests: [
            { name: 'record_fast', input: {} },
            { name: 'slow_work', input: { seconds: 4 } },
          ],
        },
        { text: 'done' },
      ],
    },
  ],
};
