/**
 * The `keel` command line as a user runs it (a real subprocess): bad config and bad usage
 * exit 2 naming what is wrong; runs that fail exit 1 with the status; run / status / abort;
 * servers that cannot start (nothing at the Temporal address, a port held) say so in one line.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { defineAgent } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { add, echo } from './fixtures/tools';
import { freePort } from './support/free-port';
import { startTestWorker, type TestWorker } from './support/harness';
import { runKeel, spawnKeel } from './support/processes';

const dir = mkdtempSync(join(tmpdir(), 'keel-cli-'));
function writeConfig(name: string, content: string | object): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : stringify(content));
  return path;
}

describe.concurrent('bad config', () => {
  it('names the field and what was expected, exit 2', async () => {
    const path = writeConfig('bad.yaml', 'taskQueue: 5\nserver:\n  port: "high"\n');
    const { code, stderr, stdout } = await runKeel(['status', 'some-run', '--config', path]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain(path);
    expect(stderr).toMatch(/taskQueue: Invalid input: expected string, received number/);
    expect(stderr).toMatch(/server\.port: Invalid input: expected number, received string/);
  });

  it('rejects unknown fields', async () => {
    const path = writeConfig('unknown-field.yaml', { temporal: { adress: 'x:1' } });
    const { code, stderr } = await runKeel(['worker', '--config', path]);
    expect(code).toBe(2);
    expect(stderr).toBe(`keel: ${path}: invalid config: temporal: Unrecognized key: "adress"\n`);
  });

  it('reports YAML syntax errors with the line', async () => {
    const path = writeConfig('syntax.yaml', 'taskQueue: keel\nagents: [\n');
    const { code, stderr } = await runKeel(['worker', '--config', path]);
    expect(code).toBe(2);
    expect(stderr).toContain(`keel: ${path} (line 3): not valid YAML: `);
  });

  it('fails when an explicitly named config file does not exist', async () => {
    const { code, stderr } = await runKeel(['worker', '--config', join(dir, 'absent.yaml')]);
    expect(code).toBe(2);
    expect(stderr).toBe(`keel: ${join(dir, 'absent.yaml')}: config file not found\n`);
  });

  it('names a declarative agent whose model is not registered', async () => {
    const path = writeConfig('unknown-model.yaml', { agents: [{ name: 'a', model: 'scripted/nowhere' }] });
    const { code, stderr } = await runKeel(['worker', '--config', path]);
    expect(code).toBe(2);
    expect(stderr).toContain('agents[0].model: model "scripted/nowhere" is not registered');
  });

  it('names a declarative agent tool that is not registered', async () => {
    const path = writeConfig('unknown-tool.yaml', {
      models: [{ name: 'scripted/m', script: [] }],
      agents: [{ name: 'a', model: 'scripted/m', tools: ['nope'] }],
    });
    const { code, stderr } = await runKeel(['worker', '--config', path]);
    expect(code).toBe(2);
    expect(stderr).toContain('agents[0].tools[0]: tool "nope" is not registered');
  });

  it('names the field of a bad scripted reply in the config and what was expected', async () => {
    const path = writeConfig('bad-script.yaml', { models: [{ name: 'scripted/m', script: [{ error: { status: 'SLOW' } }] }] });
    const { code, stderr } = await runKeel(['worker', '--config', path]);
    expect(code).toBe(2);
    expect(stderr).toContain(`keel: ${path}: invalid config: models[0].script[0].error.status: Invalid option`);
  });
});

describe.concurrent('bad usage', () => {
  it('exits 2 naming an unknown command, or a run without a prompt', async () => {
    const unknown = await runKeel(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(/^keel: unknown command "frobnicate"\n\nusage: keel <command>/);
    const noPrompt = await runKeel(['run', 'helper']);
    expect(noPrompt.code).toBe(2);
    expect(noPrompt.stderr).toContain('keel run needs an agent and a prompt');
  });

  it('checks every number option the same way, a negative one included, in one line before connecting', async () => {
    const config = writeConfig('numbers.yaml', { temporal: { address: '127.0.0.1:1' } });
    const cases: Array<[string[], string]> = [
      [['ui', '--port', '-1'], 'keel: --port: a port number from 0 to 65535, not "-1"\n'],
      [['codec-server', '--port', '65536'], 'keel: --port: a port number from 0 to 65535, not "65536"\n'],
      [['list', '--limit', '-5'], 'keel: --limit: a whole number of runs, 1 or more, not "-5"\n'],
      [['list', '--limit', '1e3'], 'keel: --limit: a whole number of runs, 1 or more, not "1e3"\n'],
      [['deploy', 'check', '--per-agent', '-2'], 'keel: --per-agent: a whole number of runs, 1 or more, not "-2"\n'],
      [['deploy', 'check', '--per-agent=0x10'], 'keel: --per-agent: a whole number of runs, 1 or more, not "0x10"\n'],
    ];
    for (const [args, stderr] of cases) {
      const result = await runKeel([...args, '--config', config]);
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({ args, code: 2, stderr });
    }
  });
});

describe.concurrent('keel ui and keel codec-server that cannot start', () => {
  it('says in one line that nothing answers at the Temporal address, at once', async () => {
    const port = await freePort();
    const config = writeConfig('ui-nothing.yaml', { temporal: { address: `127.0.0.1:${port}` }, ui: { port: 0 } });
    // "At once" is measured against the same command refused before it connects, run just before
    // on the same (maybe busy) machine: starting a process is not what is timed, waiting is.
    const refusedAt = Date.now();
    expect((await runKeel(['ui', '--port', '-1', '--config', config])).code).toBe(2);
    const startup = Date.now() - refusedAt;
    const started = Date.now();
    const { code, stderr } = await runKeel(['ui', '--config', config]);
    expect(Date.now() - started - startup, `started in ${startup} ms`).toBeLessThan(5_000);
    expect(code).toBe(1);
    expect(stderr).toBe(
      `keel: cannot reach Temporal at 127.0.0.1:${port}: nothing accepts connections there (connection refused); start one with npx keel dev (or npx keel server), or set temporal.address\n`,
    );
  });

  it('says in one line that another process holds the port', async () => {
    const held = createServer();
    await new Promise<void>((listening) => held.listen(0, '127.0.0.1', listening));
    const port = (held.address() as AddressInfo).port;
    try {
      const ui = await runKeel(['ui', '--port', String(port), '--config', writeConfig('ui-busy.yaml', { temporal: { address: inject('temporalAddress') } })]);
      expect({ code: ui.code, stderr: ui.stderr }).toEqual({
        code: 1,
        stderr: `keel: the UI cannot listen on 127.0.0.1:${port}: another process already listens there; give it another port with --port (0: a free one) or ui.port\n`,
      });
      const sealed = writeConfig('codec-busy.yaml', { codecServer: { port }, encryption: { key: 'k1', keys: { k1: { env: 'KEEL_TEST_KEY' } } } });
      const codec = await runKeel(['codec-server', '--config', sealed], { env: { KEEL_TEST_KEY: randomBytes(32).toString('base64') } });
      expect({ code: codec.code, stderr: codec.stderr }).toEqual({
        code: 1,
        stderr: `keel: the codec server cannot listen on 127.0.0.1:${port}: another process already listens there; give it another port with --port (0: a free one) or codecServer.port\n`,
      });
    } finally {
      held.close();
    }
  });
});

describe.concurrent('keel run / status / abort', () => {
  let worker: TestWorker;
  let config: string;
  beforeAll(async () => {
    const good = scriptedModel({
      name: 'scripted/cli-good',
      script: [toolCallReply({ name: 'echo', input: { v: 'x' } }, { usage: { inputTokens: 4, outputTokens: 2 } }), textReply('all good')],
    });
    const badArgs = scriptedModel({ name: 'scripted/cli-bad-args', script: [toolCallReply({ name: 'add', input: { a: 'one', b: 2 } })] });
    const slow = scriptedModel({ name: 'scripted/cli-slow', script: [{ delayMs: 60_000, text: 'too late' }] });
    const memo = scriptedModel({
      name: 'scripted/cli-memo',
      script: (request) =>
        textReply(
          `I have heard: ${request.messages
            .filter((message) => message.role === 'user')
            .map((message) => (message.content[0] as { text: string }).text)
            .join(' / ')}`,
        ),
    });
    const registry = new Registry().add(
      echo,
      add,
      good,
      badArgs,
      slow,
      memo,
      defineAgent({ name: 'memo', model: memo.name, session: 'server' }),
      defineAgent({ name: 'good', model: good.name, tools: [echo] }),
      defineAgent({ name: 'bad-args', model: badArgs.name, tools: [add] }),
      defineAgent({ name: 'ghost-model', model: 'scripted/not-registered' }),
      defineAgent({ name: 'slow', model: slow.name }),
    );
    worker = await startTestWorker(registry);
    config = writeConfig('cli.yaml', { temporal: { address: worker.config.temporal.address }, taskQueue: worker.taskQueue, server: { enabled: false } });
  });
  afterAll(async () => {
    await worker?.stop();
  });

  it('prints the final text, and with --json the run summary', async () => {
    const plain = await runKeel(['run', 'good', 'say', 'hi', '--config', config]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toBe('all good\n');
    expect(plain.stderr).toContain('→ echo({"v":"x"})');
    const json = await runKeel(['run', 'good', 'say hi', '--json', '--config', config]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      status: 'completed',
      finishReason: 'stop',
      text: 'all good',
      usage: { inputTokens: 4, outputTokens: 2 },
      interrupts: [],
      tasks: [],
    });
  });

  it('continues a session with --session: each run sees the ones before', async () => {
    const session = `cli-${Date.now()}`;
    const first = await runKeel(['run', 'memo', 'my name is Ada', '--session', session, '--config', config]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe('I have heard: my name is Ada\n');
    const second = await runKeel(['run', 'memo', 'who am I?', '--session', session, '--json', '--config', config]);
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({
      status: 'completed',
      text: 'I have heard: my name is Ada / who am I?',
      sessionId: session,
      runId: `session/memo/${session}/run-2`,
    });
    const wrong = await runKeel(['run', 'good', 'hi', '--session', session, '--config', config]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe(`keel run: INVALID_ARGUMENT: agent "good" is client-managed (session: 'client'): send its state, not a session id\n`);
  });

  it('refuses a session id that is empty, too long, or names another session’s run, naming the rule, exit 2', async () => {
    const session = `taken-${Date.now()}`;
    expect((await runKeel(['run', 'memo', 'hello', '--session', session, '--config', config])).code).toBe(0);
    for (const [id, why] of [
      ['', 'the session id is empty'],
      ['x'.repeat(5000), 'the session id has 5000 characters'],
      [`${session}/run-1`, `has the segment "run-1", which names a session's run`],
      ['two words', 'has the character " "'],
    ] as const) {
      const refused = await runKeel(['run', 'memo', 'hi', '--session', id, '--config', config]);
      expect(refused.code, id.slice(0, 20)).toBe(2);
      expect(refused.stderr).toContain(why);
      expect(refused.stderr).toContain(
        'a session id is 1-200 characters of letters, digits and . _ - : @ = +, in segments separated by single "/", none of them "run-<n>"',
      );
    }
    // The first session's run is untouched.
    expect((await worker.client.getHandle(`session/memo/${session}/run-1`).result()).text).toBe('I have heard: hello');
  });

  it('exits 2 at once for an agent no polling worker knows, naming the ones they know, and says the run was created', async () => {
    const started = Date.now();
    const { code, stdout, stderr } = await runKeel(['run', 'nobody', 'hi', '--json', '--config', config]);
    expect(code).toBe(2);
    expect(Date.now() - started).toBeLessThan(30_000);
    const summary = JSON.parse(stdout) as { runId: string; status: string; error: { status: string; message: string } };
    expect(summary).toMatchObject({ status: 'running', error: { status: 'NOT_FOUND' } });
    expect(summary.error.message).toMatch(new RegExp(`^unknown agent "nobody"; the workers polling task queue "${worker.taskQueue}" know: .*\\bgood\\b`));
    expect(summary.error.message).toContain(`The run ${summary.runId} was created and keeps trying for up to`);
    expect(stderr).toContain('keel run: unknown agent "nobody"');
    // It keeps trying for the worker's notRegisteredRetryFor (2 s for the test worker), then fails NOT_FOUND.
    await expect(worker.client.getHandle(summary.runId).result()).rejects.toMatchObject({ status: 'NOT_FOUND' });
  });

  it('exits 2 at once for an agent whose model no polling worker has', async () => {
    const { code, stdout } = await runKeel(['run', 'ghost-model', 'hi', '--json', '--config', config]);
    expect(code).toBe(2);
    const summary = JSON.parse(stdout) as { runId: string; error: { status: string; message: string } };
    expect(summary.error).toMatchObject({
      status: 'NOT_FOUND',
      message: expect.stringContaining(
        `agent "ghost-model" needs model "scripted/not-registered", which no worker polling task queue "${worker.taskQueue}" has`,
      ),
    });
  });

  it('exits 1 with INVALID_ARGUMENT naming the field when tool arguments fail their schema', async () => {
    const { code, stdout, stderr } = await runKeel(['run', 'bad-args', 'hi', '--config', config]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain('INVALID_ARGUMENT: tool "add": invalid input: a: Invalid input: expected number, received string');
  });

  // Its own expect: the file's tests run side by side, and a poll needs to know its test.
  it('detaches, reports status, and aborts', async ({ expect }) => {
    const detached = await runKeel(['run', 'slow', 'hi', '--detach', '--json', '--config', config]);
    expect(detached.code).toBe(0);
    const { runId } = JSON.parse(detached.stdout) as { runId: string };
    expect(runId).toMatch(/^run-/);
    const running = await runKeel(['status', runId, '--json', '--config', config]);
    expect(running.code).toBe(0);
    expect(JSON.parse(running.stdout)).toMatchObject({ runId, status: 'running', turn: 1, interrupts: [], tasks: [] });
    const abort = await runKeel(['abort', runId, '--json', '--config', config]);
    expect(abort.code).toBe(0);
    await expect
      .poll(async () => JSON.parse((await runKeel(['status', runId, '--json', '--config', config])).stdout).status, { timeout: 20_000, interval: 500 })
      .toBe('cancelled');
    // Once it has ended there is nothing to abort: one line saying how it ended, exit 1.
    const again = await runKeel(['abort', runId, '--config', config]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`keel abort: run "${runId}" has already ended (cancelled); there is nothing to abort\n`);
  });

  it('names a run with --id or --id-prefix, and refuses an id already open in one line', async () => {
    const id = `chosen-${Date.now()}`;
    const first = await runKeel(['run', 'slow', 'hi', '--id', id, '--detach', '--json', '--config', config]);
    expect(JSON.parse(first.stdout)).toMatchObject({ runId: id });
    const again = await runKeel(['run', 'slow', 'hi', '--id', id, '--detach', '--config', config]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`keel run: ALREADY_EXISTS: a run with id "${id}" is already open; choose another id\n`);
    const prefixed = await runKeel(['run', 'slow', 'hi', '--id-prefix', 'nightly', '--detach', '--json', '--config', config]);
    expect(JSON.parse(prefixed.stdout).runId).toMatch(/^nightly-[0-9a-f-]{36}$/);
    for (const runId of [id, JSON.parse(prefixed.stdout).runId as string]) await runKeel(['abort', runId, '--config', config]);
  });

  it('reports status from Temporal itself when no worker answers', async () => {
    const orphanConfig = writeConfig('no-worker.yaml', {
      temporal: { address: worker.config.temporal.address },
      taskQueue: `nobody-${Date.now()}`,
      server: { enabled: false },
    });
    const detached = await runKeel(['run', 'good', 'hi', '--detach', '--json', '--config', orphanConfig]);
    const { runId } = JSON.parse(detached.stdout);
    const status = await runKeel(['status', runId, '--json', '--config', orphanConfig]);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ runId, status: 'running', workerAnswered: false, turn: 0, interrupts: [] });
    expect(status.stderr).toMatch(
      /^keel status: no worker is polling task queue "nobody-\d+" at .*; the run waits, durably, until one starts \(npx keel worker\)\nkeel status: no worker answered the run's status query; showing what the run last recorded in Temporal \(its state and pending holds; turn and usage need a worker\)\n$/,
    );
    expect((await runKeel(['abort', runId, '--config', orphanConfig])).code).toBe(0);
  });

  it('says so when `keel run` waits on a task queue no worker polls', async () => {
    const orphanConfig = writeConfig('no-worker-run.yaml', {
      temporal: { address: worker.config.temporal.address },
      taskQueue: `nobody-run-${Date.now()}`,
      server: { enabled: false },
    });
    const waiting = spawnKeel(['run', 'good', 'hi', '--config', orphanConfig]);
    try {
      await waiting.waitFor(/keel run: no worker is polling task queue "nobody-run-\d+"/, 30_000);
    } finally {
      waiting.kill('SIGKILL');
      await waiting.exited;
    }
  });

  it('with --json, puts a failure on stdout as { error } too', async () => {
    const missing = await runKeel(['status', 'run-does-not-exist', '--json', '--config', config]);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout)).toEqual({ error: { status: 'NOT_FOUND', message: 'run "run-does-not-exist" not found' } });
    const refused = await runKeel(['approve', 'run-does-not-exist', 'i1', '--json', '--config', config]);
    expect(JSON.parse(refused.stdout)).toMatchObject({ error: { status: 'NOT_FOUND' } });
    const badConfig = writeConfig('bad-json.yaml', { taskQueue: 5 });
    const usage = await runKeel(['status', 'x', '--json', '--config', badConfig]);
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stdout)).toMatchObject({ error: { status: 'INVALID_ARGUMENT', message: expect.stringContaining('taskQueue') } });
  });

  it('exits 1 for the status of an unknown run', async () => {
    const { code, stdout, stderr } = await runKeel(['status', 'run-does-not-exist', '--config', config]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe('keel status: run "run-does-not-exist" not found\n');
  });
});

describe.concurrent('middleware in temporal.yaml', () => {
  it('names an unknown middleware of a declarative agent', async () => {
    const path = writeConfig('unknown-middleware.yaml', {
      models: [{ name: 'scripted/m', script: [] }],
      agents: [{ name: 'a', model: 'scripted/m', use: [{ name: 'retyr' }] }],
    });
    const { code, stderr } = await runKeel(['worker', '--config', path]);
    expect(code).toBe(2);
    expect(stderr).toContain(
      'agents[0].use[0].name: unknown middleware "retyr"; known: agents, artifacts, budget, contextCompression, fallback, filesystem, recordedTools, retry, skills, softToolErrors, toolApproval',
    );
  });

  it('names the bad field of a middleware config', async () => {
    const path = writeConfig('bad-middleware.yaml', {
      models: [{ name: 'scripted/m', script: [] }],
      agents: [
        {
          name: 'a',
          model: 'scripted/m',
          use: [
            { name: 'fallback', config: { models: [{ name: 'x', temperature: 1 }] } },
            { name: 'retry', config: { statuses: ['SLOW'] } },
          ],
        },
      ],
    });
    const { code, stderr } = await runKeel(['worker', '--config', path]);
    expect(code).toBe(2);
    expect(stderr).toContain('agents[0].use[0] (fallback): config.models[0]: Unrecognized key: "temperature"');
  });

  it('rejects a status name that does not exist', async () => {
    const path = writeConfig('bad-status.yaml', {
      models: [{ name: 'scripted/m', script: [] }],
      agents: [{ name: 'a', model: 'scripted/m', use: [{ name: 'retry', config: { statuses: ['SLOW'] } }] }],
    });
    const { code, stderr } = await runKeel(['worker', '--config', path]);
    expect(code).toBe(2);
    expect(stderr).toContain('agents[0].use[0] (retry): config.statuses[0]: Invalid option');
  });
});
