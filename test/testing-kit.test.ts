/**
 * keel-agents/testing as a user's project uses it: `createTestEnv` on the project's own
 * temporal.yaml and modules (test/fixtures/testkit-project), a scripted model over the real
 * one by name, assertions on tool calls and holds, and decisions; `keel history export` of a
 * run and `replayHistories` of the file (a changed middleware fails, naming the file); and
 * `keel init`.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { createTestEnv, type TestEnv } from '../src/testing/test-env';
import { HistoryReplayError, replayHistories } from '../src/testing/replay';
import { historyFileName } from '../src/ops/history-export';
import { INIT_TEST_SCRIPT } from '../src/dev/init';
import { ROOT, runKeel } from './support/processes';

const PROJECT = join(__dirname, 'fixtures', 'testkit-project');

/** The stand-in for the project's openai/gpt-4o-mini: looks the order up, refunds it when asked to, answers. */
function clerkModel() {
  return scriptedModel({
    name: 'openai/gpt-4o-mini',
    script: (request, callIndex) => {
      if (callIndex === 0) return toolCallReply({ name: 'lookup', input: { order: '7' } });
      if (callIndex === 1 && JSON.stringify(request.messages).includes('refund')) return toolCallReply({ name: 'refund', input: { order: '7' } });
      return textReply(`done (${callIndex})`);
    },
  });
}

describe('createTestEnv', () => {
  let env: TestEnv;
  beforeAll(async () => {
    env = await createTestEnv({ config: join(PROJECT, 'temporal.yaml'), models: [clerkModel()], temporalAddress: inject('temporalAddress') });
  }, 120_000);
  afterAll(async () => {
    await env?.close();
  });

  it("runs the project's agent with the scripted model in place of the real one, and reads its tool calls back", async () => {
    // Turns: lookup; text.
    const result = await env.run('clerk', 'where is order 7?');
    expect(result.text).toBe('done (1)');
    const calls = await env.expectToolCalls(result.runId, [{ name: 'lookup', input: { order: '7' } }]);
    expect(calls).toEqual([expect.objectContaining({ name: 'lookup', input: { order: '7' }, output: 'order 7: shipped' })]);
  });

  it('says what the run called when the tool calls are not the ones expected', async () => {
    const result = await env.run('clerk', 'where is order 7?');
    await expect(env.expectToolCalls(result.runId, ['refund'])).rejects.toThrow(
      `run ${result.runId}: expected tool calls ["refund"], got [{"name":"lookup","input":{"order":"7"}}]`,
    );
    await expect(env.expectToolCalls(result.runId, [{ name: 'lookup', input: { order: '8' } }])).rejects.toThrow(/expected tool calls/);
  });

  it('finds a hold and decides it: approved, the held tool runs', async () => {
    // Turns: lookup; refund (held, approved); text.
    const handle = await env.start('clerk', 'refund order 7');
    const hold = await env.expectHold(handle, { toolName: 'refund', kind: 'approval' });
    expect(hold).toMatchObject({ toolName: 'refund', input: { order: '7' } });
    await env.approve(handle, hold.id, 'fine');
    const result = await handle.result();
    expect(result.text).toBe('done (2)');
    const calls = await env.expectToolCalls(handle, ['lookup', 'refund']);
    expect(calls[1]!.output).toBe('refunded 7');
    expect(result.decisions).toEqual([expect.objectContaining({ interruptId: hold.id })]);
  });

  it('denies a hold: the tool does not run', async () => {
    const handle = await env.start('clerk', 'refund order 7');
    const hold = await env.expectHold(handle, { toolName: 'refund' });
    await env.deny(handle.runId, hold.id, 'no refunds today');
    await handle.result();
    const calls = await env.toolCalls(handle);
    expect(calls.map((call) => call.name)).toEqual(['lookup', 'refund']);
    expect(JSON.stringify(calls[1]!.output)).toContain('no refunds today');
  });

  it('names the pending holds when none matches in time', async () => {
    const result = await env.run('clerk', 'where is order 7?');
    await expect(env.expectHold(result.runId, { toolName: 'refund', timeoutMs: 200 })).rejects.toThrow(
      `run ${result.runId}: no hold matching {"toolName":"refund"} within 200 ms; pending holds: none`,
    );
  });
});

describe('createTestEnv with a dev server of its own', () => {
  it('starts a server from the temporal binary it is given, runs the agent, and stops it on close', async () => {
    const env = await createTestEnv({ config: join(PROJECT, 'temporal.yaml'), models: [clerkModel()], temporalBinary: inject('temporalBinary') });
    try {
      expect(env.temporalAddress).not.toBe(inject('temporalAddress'));
      const result = await env.run('clerk', 'where is order 7?');
      expect(result.text).toBe('done (1)');
    } finally {
      await env.close();
    }
  }, 120_000);
});

describe('keel history export and replayHistories', () => {
  let env: TestEnv;
  const out = mkdtempSync(join(tmpdir(), 'keel-histories-'));
  const configPath = join(out, 'temporal.yaml');
  beforeAll(async () => {
    env = await createTestEnv({ config: join(PROJECT, 'temporal.yaml'), models: [clerkModel()], temporalAddress: inject('temporalAddress') });
    writeFileSync(configPath, stringify({ temporal: { address: inject('temporalAddress') } }));
  }, 120_000);
  afterAll(async () => {
    await env?.close();
  });

  it('exports a run to <runId>.json that replays against the same middleware, and fails, naming the file, against a changed one', async () => {
    const result = await env.run('clerk', 'where is order 7?', { runId: `export/${Date.now()}` });
    const exported = await runKeel(['history', 'export', result.runId, '--out', out, '--config', configPath]);
    expect(exported.stderr).toContain(`wrote the history of run ${result.runId} to`);
    expect(exported.code).toBe(0);
    const file = join(out, historyFileName(result.runId));
    expect(JSON.parse(readFileSync(file, 'utf8')).events[0].eventType).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_STARTED');

    // The project's own middleware (from its temporal.yaml): replays.
    await replayHistories([file], { config: join(PROJECT, 'temporal.yaml') });
    // The same middleware changed without patched(): a timer where v1 had none.
    const changed = replayHistories([file], { middlewareModules: [join(__dirname, 'fixtures', 'unpatched-v2.ts')] });
    await expect(changed).rejects.toBeInstanceOf(HistoryReplayError);
    await expect(changed).rejects.toThrow(new RegExp(`${file.replace(/[.%/]/g, '\\$&')} \\(run ${result.runId}\\): .*[Nn]ondetermin`));
  }, 120_000);

  it('exports the latest execution of a run that continued as new, says so, and that history replays', async () => {
    // Continues as new after every turn: the clerk's two tool rounds make three executions.
    const result = await env.run('clerk', 'where is order 7?', { runId: `export-chain/${Date.now()}`, continueAsNewAt: { historyEvents: 1 } });
    expect(result.text).toBe('done (1)');
    const exported = await runKeel(['history', 'export', result.runId, '--out', out, '--config', configPath]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toMatch(/its latest execution: the run continued as new, this execution from [0-9a-f-]{36}; each execution replays on its own/);
    const file = join(out, historyFileName(result.runId));
    const started = JSON.parse(readFileSync(file, 'utf8')).events[0];
    expect(started.workflowExecutionStartedEventAttributes.continuedExecutionRunId).toMatch(/^[0-9a-f-]{36}$/);
    await replayHistories([file], { config: join(PROJECT, 'temporal.yaml') });
    // On stdout too, the note on stderr.
    const printed = await runKeel(['history', 'export', result.runId, '--config', configPath]);
    expect(printed.code).toBe(0);
    expect(JSON.parse(printed.stdout).events[0].workflowExecutionStartedEventAttributes.continuedExecutionRunId).toBe(
      started.workflowExecutionStartedEventAttributes.continuedExecutionRunId,
    );
    expect(printed.stderr).toContain('the run continued as new');
  }, 120_000);

  it('prints the history on stdout without --out, and refuses an unknown run', async () => {
    const result = await env.run('clerk', 'where is order 7?');
    const printed = await runKeel(['history', 'export', result.runId, '--config', configPath]);
    expect(printed.code).toBe(0);
    expect(JSON.parse(printed.stdout).events.length).toBeGreaterThan(5);
    const unknown = await runKeel(['history', 'export', 'no-such-run', '--config', configPath]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('keel history export:');
    const usage = await runKeel(['history', 'show', 'x', '--config', configPath]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('keel history export <runId> [--out <file>]');
  }, 60_000);

  it('fails, naming what it was given, when there is no history to replay', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'keel-no-histories-'));
    writeFileSync(join(empty, 'README.md'), 'recorded runs go here\n');
    await expect(replayHistories([empty])).rejects.toThrow(`replayHistories: no recorded histories to replay (no .json files in ${empty})`);
    await expect(replayHistories([])).rejects.toThrow('replayHistories: no recorded histories to replay (an empty list)');
  });

  it('says which file is not a history', async () => {
    const bad = join(out, 'bad.json');
    writeFileSync(bad, '{"events": 3}');
    await expect(replayHistories([bad])).rejects.toThrow(`${bad}: not a recorded history`);
  });
});

describe('keel init', () => {
  it('writes a runnable project into an empty directory, and says how to run it', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'keel-init-')), 'my-shop');
    const { code, stdout } = await runKeel(['init', dir]);
    expect(code).toBe(0);
    for (const file of ['temporal.yaml', 'agents.ts', 'agents.test.ts', 'tsconfig.json', '.gitignore', 'package.json'])
      expect(existsSync(join(dir, file)), file).toBe(true);
    expect(stdout).toContain('npx keel run support "where is order 7?"');
    expect(readFileSync(join(dir, 'temporal.yaml'), 'utf8')).toContain('taskQueue: my-shop');
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))).toMatchObject({ name: 'my-shop', scripts: { test: INIT_TEST_SCRIPT } });
  });

  it('adds the test script to an existing package.json and keeps a test script of its own', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-init-'));
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'x', scripts: { test: 'echo "Error: no test specified" && exit 1' }, dependencies: { a: '1' } }),
    );
    expect((await runKeel(['init'], { cwd: dir })).code).toBe(0);
    // What its files import, at the versions keel itself is built with (one zod for keel and the project).
    const keel = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))).toEqual({
      name: 'x',
      scripts: { test: INIT_TEST_SCRIPT, typecheck: 'tsc' },
      dependencies: { a: '1', zod: keel.dependencies.zod },
      devDependencies: { typescript: keel.devDependencies.typescript, '@types/node': keel.devDependencies['@types/node'] },
    });

    // What the project has of its own is kept: its test script, its zod (wherever it lists it), its TypeScript.
    const own = mkdtempSync(join(tmpdir(), 'keel-init-'));
    const mine = { name: 'y', scripts: { test: 'jest', typecheck: 'tsc -b' }, devDependencies: { zod: '^4.1.0', typescript: '5.8.0', '@types/node': '22' } };
    writeFileSync(join(own, 'package.json'), JSON.stringify(mine));
    const kept = await runKeel(['init', own]);
    expect(kept.code).toBe(0);
    expect(kept.stdout).not.toContain('package.json gained');
    expect(kept.stdout).not.toContain('npm install');
    expect(JSON.parse(readFileSync(join(own, 'package.json'), 'utf8'))).toEqual(mine);
  });

  it('refuses, in one line and at once, a file for a directory, or a directory it cannot make', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-init-'));
    const file = join(dir, 'notes.txt');
    writeFileSync(file, 'mine\n');
    const onFile = await runKeel(['init', file]);
    expect({ code: onFile.code, stderr: onFile.stderr }).toEqual({
      code: 2,
      stderr: `keel: init: ${file} is a file, not a directory; give a directory (new or existing)\n`,
    });
    expect(readFileSync(file, 'utf8')).toBe('mine\n');
    // /proc takes no new directories: Node's recursive mkdir would retry it forever.
    const started = Date.now();
    const inProc = await runKeel(['init', '/proc/keel-project']);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(inProc.code).toBe(2);
    expect(inProc.stderr).toMatch(/^keel: init: cannot create \/proc\/keel-project: ENOENT: .*\n$/);
  }, 30_000);

  it('refuses to overwrite, naming the files that exist, and writes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-init-'));
    writeFileSync(join(dir, 'agents.ts'), '// mine\n');
    writeFileSync(join(dir, 'temporal.yaml'), 'taskQueue: mine\n');
    const { code, stderr } = await runKeel(['init', dir]);
    expect(code).toBe(2);
    expect(stderr).toContain(`keel: init: ${dir} has temporal.yaml, agents.ts already; nothing was written`);
    expect(existsSync(join(dir, 'agents.test.ts'))).toBe(false);
    expect(readFileSync(join(dir, 'agents.ts'), 'utf8')).toBe('// mine\n');
  });
});
