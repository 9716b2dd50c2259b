/**
 * The long-running commands as a user starts them: `keel server` serves the configured
 * SQLite file and stops on SIGTERM; `keel dev` runs server + worker; `keel demo` (what
 * `npm start` runs) starts what it needs, runs the demo agent and prints the UI address.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { isServerReachable } from '../src/server/dev-server';
import { freePort } from './support/free-port';
import { BIN, ROOT, runKeel, spawnCommand, spawnKeel, writeTestConfig } from './support/processes';
import { screenLines } from './support/terminal';

async function configWithOwnServer(extra: object = {}): Promise<{ path: string; dir: string; port: number; uiPort: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'keel-proc-'));
  const [port, uiPort] = [await freePort(), await freePort()];
  const path = join(dir, 'temporal.yaml');
  writeFileSync(
    path,
    stringify({
      taskQueue: 'keel-proc',
      server: { port, uiPort, dbFile: 'server.db', binary: inject('temporalBinary') },
      modules: [join(ROOT, 'examples', 'agents.ts')],
      ...extra,
    }),
  );
  return { path, dir, port, uiPort };
}

describe('keel server', () => {
  it('serves the configured SQLite file until SIGTERM, then stops cleanly', async () => {
    const { path, dir, port } = await configWithOwnServer();
    const server = spawnKeel(['server', '--config', path]);
    try {
      await server.waitFor(/Temporal dev server at 127\.0\.0\.1:\d+/);
      expect(await isServerReachable(`127.0.0.1:${port}`)).toBe(true);
      expect(existsSync(join(dir, 'server.db'))).toBe(true);
      server.kill('SIGTERM');
      expect(await server.exited).toBe(0);
      expect(await isServerReachable(`127.0.0.1:${port}`, 1000)).toBe(false);
    } finally {
      server.kill('SIGKILL');
    }
  });
});

describe('keel dev', () => {
  it('runs a server and a worker that answer `keel run`', async () => {
    const { path } = await configWithOwnServer();
    const dev = spawnKeel(['dev', '--config', path], { env: { OPENAI_BASE_URL: '', OPENAI_API_KEY: '' } });
    try {
      await dev.waitFor(/keel: worker \d+ on task queue "keel-proc"/);
      // turn 3 books a train, which waits for approval
      const env = { OPENAI_BASE_URL: '', OPENAI_API_KEY: '' };
      const started = await runKeel(['run', 'trip-planner', 'Lisbon', 'or', 'Porto?', '--detach', '--json', '--config', path], { env });
      expect(started.code).toBe(0);
      const { runId } = JSON.parse(started.stdout);
      const status = async () => JSON.parse((await runKeel(['status', runId, '--json', '--config', path])).stdout);
      await expect.poll(async () => (await status()).interrupts[0]?.toolName, { timeout: 30_000, interval: 300 }).toBe('book_train');
      expect((await runKeel(['approve', runId, 'i1', '--config', path])).code).toBe(0);
      await expect.poll(async () => (await status()).status, { timeout: 30_000, interval: 300 }).toBe('completed');
      expect(await status()).toMatchObject({
        finishReason: 'stop',
        text: expect.stringContaining('Your ticket is booked'),
        usage: { inputTokens: 1270, outputTokens: 172 },
        tasks: [expect.objectContaining({ agent: 'fare-scout' })],
      });
      dev.kill('SIGTERM');
      expect(await dev.exited).toBe(0);
    } finally {
      dev.kill('SIGKILL');
    }
  });
});

describe('keel demo', () => {
  it('starts a server and a worker, prints each turn, the answer and how to see the run again, and exits 0', async () => {
    const { path, uiPort } = await configWithOwnServer();
    const env: Record<string, string> = { OPENAI_BASE_URL: '', OPENAI_API_KEY: '' };
    const { code, stdout, stderr } = await runKeel(['demo', '--config', path], { env });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('started a Temporal dev server');
    expect(stdout).toContain('started a worker');
    expect(stdout).toMatch(/turn 1\n {2}→ lookup_weather\(\{"city":"Lisbon"\}\)\n {2}→ lookup_weather\(\{"city":"Porto"\}\)\n {2}→ delegate_to_fare-scout\(/);
    // the fare scout works in the background; the planner collects its answer
    expect(stdout).toMatch(/← delegate_to_fare-scout: \{"taskId":"fare-scout:run-[^"]+\/fare-scout-1","status":"pending"/);
    expect(stdout).toMatch(
      /← wait_for_background_tasks: \{"tasks":\[\{"taskId":"fare-scout:run-[^"]+","agent":"fare-scout","name":"fare","status":"completed"/,
    );
    // the background task's progress shows as it goes, and no colours off a terminal
    expect(stdout).toMatch(/ {2}⧗ background task fare \(fare-scout\) (running|completed)/);
    expect(stdout).toContain('⧗ background task fare (fare-scout) completed: The 25 EUR');
    expect(stdout).not.toContain('\x1b[');
    expect(stdout).toContain('→ book_train({"from":"Porto","to":"Lisbon"})');
    expect(stdout).toMatch(/⏸ book_train\(\{"from":"Porto","to":"Lisbon"\}\) needs approval/);
    expect(stdout).toContain('not a terminal: approving automatically');
    expect(stdout).toContain('approved i1');
    expect(stdout).toContain('Your ticket is booked');
    expect(stdout).toContain('The 25 EUR train ticket comes to about 27 USD. Your ticket is booked');
    // the sub-agent's usage (60 + 80 input, 10 + 12 output) counts in the run's
    // the skill is loaded and the itinerary written under .keel/trips, as the trip-writer skill asks
    // On one line, cut short (not SKILL.md spilled over the transcript), with the skill's directory relative:
    // the transcript never shows the checkout's absolute path.
    expect(stdout).toMatch(/\n {2}← use_skill: <skill_content name="trip-writer" path="examples\/skills\/trip-writer"> --- name: trip-writer [^\n]*…\n/);
    expect(stdout).not.toContain(ROOT);
    // A tool call's worker line follows the model's request for the call and comes before its result.
    const lines = stdout.split('\n');
    lines.forEach((line, index) => {
      const name = /⚙ (\S+) runs on worker/.exec(line)?.[1];
      if (!name) return;
      const before = lines.slice(0, index);
      const requested = before.filter((earlier) => earlier.includes(`→ ${name}(`)).length;
      const answered = before.filter((earlier) => earlier.includes(`← ${name}:`)).length;
      expect(requested, `${line}\n(line ${index + 1}) is not between a request for ${name} and its result:\n${stdout}`).toBeGreaterThan(answered);
    });
    const written = /← write_file: File (itinerary-[0-9a-f]{8}\.md) written successfully\./.exec(stdout);
    expect(written, stdout).not.toBeNull();
    expect(readFileSync(join(ROOT, '.keel', 'trips', written![1]!), 'utf8')).toContain(
      '2. Train Porto → Lisbon: The 25 EUR train ticket comes to about 27 USD.',
    );
    expect(stdout).toContain('answer (stop, 5 turns, 1270 input / 172 output tokens)');
    // The demo stops the server it started: no link to it, but how to see the run again.
    expect(stdout).not.toContain(`:${uiPort}`);
    const runId = /· run (run-\S+) \(agent trip-planner\)/.exec(stdout)![1]!;
    expect(stdout).toContain(
      `  npx keel server --config ${path}\nthen open run ${runId} in the Temporal UI it names, or: npx keel status ${runId} --config ${path}`,
    );
  });

  it('uses a server that is already running instead of starting one', async () => {
    const { path } = await configWithOwnServer({ temporal: { address: inject('temporalAddress') }, taskQueue: `demo-${Date.now()}` });
    // At DEBUG the worker it starts logs as it goes: through the demo's one writer (src/cli/prompt-lines.ts),
    // which puts a line above a question that waits, as a warning of a busy worker would go.
    const env = { OPENAI_BASE_URL: '', OPENAI_API_KEY: '', KEEL_LOG_LEVEL: 'DEBUG' };
    const { code, stdout, stderr } = await runKeel(['demo', '--config', path], { env });
    expect(code).toBe(0);
    expect(stdout).toMatch(/\[DEBUG\] /);
    expect(stderr).toBe('');
    expect(stdout).toContain(`using the Temporal server already running at ${inject('temporalAddress')}, not started by keel from this project`);
    expect(stdout).toContain('Go to Lisbon');
    // That server goes on running: the link to the run in its UI stays good.
    expect(stdout).toMatch(
      /Inspect the run \(every model and tool call is an activity in its history\) in the Temporal UI:\n {2}http:\/\/127\.0\.0\.1:\d+\/namespaces\/default\/workflows\/run-/,
    );
  });

  it('asks at a terminal without blocking the run, and gives way to a decision made elsewhere', async () => {
    const { path } = await configWithOwnServer({ temporal: { address: inject('temporalAddress') }, taskQueue: `demo-tty-${Date.now()}` });
    // `script` gives the demo a terminal; its stdin stays open and nobody types.
    const demo = spawnCommand('script', ['-qfec', `${process.execPath} ${BIN} demo --config ${path}`, '/dev/null'], {
      env: { OPENAI_BASE_URL: '', OPENAI_API_KEY: '' },
      stdin: 'pipe',
    });
    try {
      await demo.waitFor(/approve book_train\? \[y\/N\]/, 120_000);
      // The run's progress goes on printing while the question waits (a background task's line, for one).
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const [, runId, interruptId] = /npx keel approve (\S+) (\S+)/.exec(demo.output())!;
      const approved = await runKeel(['approve', runId!, interruptId!, '--config', path]);
      expect(approved.code).toBe(0);
      expect(await demo.exited).toBe(0);
      const output = demo.output();
      expect(output).toContain(`${interruptId} was decided elsewhere (or the run ended); the run goes on`);
      // The run went on past the hold and answered; the prompt never asked again.
      expect(output).toMatch(/← book_train:/);
      expect(output).toMatch(/answer \(stop, \d+ turns/);
      // On a terminal, lines are coloured (a tool call in cyan).
      expect(output).toMatch(/\x1b\[36m {2}→ book_train/);
      // No line lands on the question: on the screen, the prompt's line holds the prompt alone.
      const screen = screenLines(output);
      expect(screen.filter((line) => line.includes('[y/N]'))).toEqual(['    approve book_train? [y/N]']);
      expect(screen).toContain(`    ${interruptId} was decided elsewhere (or the run ended); the run goes on`);
    } finally {
      demo.kill('SIGKILL');
    }
  });
});

describe('worker.ts', () => {
  it('starts a worker from the temporal.yaml of its working directory, as a project of your own would', async () => {
    const { dir, configPath } = writeTestConfig('worker-ts', {
      agents: [{ name: 'from-file', description: 'Answers.', model: 'scripted/from-file' }],
      models: [{ name: 'scripted/from-file', script: [{ text: 'started by worker.ts' }] }],
    });
    const child = spawn(process.execPath, [join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), join(ROOT, 'worker.ts')], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.once('close', done));
    try {
      await expect.poll(() => output, { timeout: 60_000, interval: 100 }).toMatch(/keel: worker \d+ on task queue/);
      const client = await KeelClient.connect(loadConfig({ path: configPath }));
      try {
        expect((await client.run('from-file', 'hi')).text).toBe('started by worker.ts');
      } finally {
        await client.close();
      }
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
