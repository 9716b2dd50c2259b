/**
 * Other Temporal clients drive keel in plain JSON: examples/python/approve_run.py (the
 * official Python SDK, installed from PyPI into .keel/python by this test) starts a run,
 * approves its held call with the `resume` update and reads the result; and
 * examples/python/decide_hold.py decides a hold of a middleware's own (examples/spending-gate.ts)
 * from what the hold says of itself: its question and its decision's JSON Schema.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../src/define';
import { toolApproval } from '../src/features/tool-approval/tool-approval';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { dangerous } from './fixtures/tools';
import { pay } from './fixtures/spending-agents';
import { spendingGate } from '../examples/spending-gate';
import { sharedTestWorker } from './support/harness';
import { ROOT } from './support/processes';

/** The Temporal Python SDK version the example is run with. */
const TEMPORALIO = '1.35.0';
/** The JSON Schema validator decide_hold.py checks a decision with. */
const JSONSCHEMA = '4.23.0';
const VENV = join(ROOT, '.keel', 'python');
const PYTHON = join(VENV, 'bin', 'python');

const run = promisify(execFile);

/** A virtualenv with temporalio from PyPI (kept in .keel/, git-ignored, made once), made before the worker starts. */
beforeAll(async () => {
  const versions = `import importlib.metadata as m; print(m.version('temporalio'), m.version('jsonschema'))`;
  const installed =
    existsSync(PYTHON) &&
    (await run(PYTHON, ['-c', versions], { encoding: 'utf8' }).then(
      ({ stdout }) => stdout.trim() === `${TEMPORALIO} ${JSONSCHEMA}`,
      () => false,
    ));
  if (!installed) {
    if (!existsSync(PYTHON)) await run('python3', ['-m', 'venv', VENV]);
    await run(join(VENV, 'bin', 'pip'), ['install', '--quiet', `temporalio==${TEMPORALIO}`, `jsonschema==${JSONSCHEMA}`]);
  }
}, 180_000);

const spender = scriptedModel({ name: 'scripted/py-spender', script: [toolCallReply({ name: 'pay', input: { amount: 500 } }), textReply('paid')] });
const model = scriptedModel({ name: 'scripted/py-approve', script: [toolCallReply({ name: 'dangerous', input: { v: '/tmp/x' } }), textReply('cleaned up')] });
const registry = new Registry()
  .add(dangerous, model, defineAgent({ name: 'py-approve', model: model.name, tools: [dangerous], use: [toolApproval()] }))
  .add(pay, spender, defineAgent({ name: 'py-spender', model: spender.name, tools: [pay], use: [spendingGate({ limit: 100 })] }));
const worker = sharedTestWorker(registry, { middlewareModules: [join(ROOT, 'examples', 'spending-gate.ts')] });

/** Runs an example script against the test worker; its last line of output, parsed. */
async function example<T>(script: string, ...args: string[]): Promise<T> {
  const { config, taskQueue } = worker();
  // Asynchronously: the keel worker runs in this process and must keep serving the run.
  const { stdout } = await run(PYTHON, [join(ROOT, 'examples', 'python', script), config.temporal.address!, taskQueue, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  }).catch((error: Error & { stderr?: string }) => {
    throw new Error(`${error.message}\n${error.stderr ?? ''}`);
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as T;
}

describe('a Python client', () => {
  it('starts a run, approves its held call and reads the result, in plain JSON', async () => {
    const result = await example<{ runId: string; held: string; decided: string[]; text: string; turns: number }>('approve_run.py', 'py-approve');
    expect(result).toMatchObject({ held: 'dangerous', text: 'cleaned up', turns: 2 });
    expect(result.decided).toHaveLength(1);
    // The approval reached the tool: its output is in the conversation the model saw next.
    expect(JSON.stringify(model.requests.at(-1)!.request.messages)).toContain('"deleted":"/tmp/x"');
  }, 180_000);

  it("decides a middleware's own hold from its question and decision schema alone", async () => {
    interface Outcome {
      hold: { kind: string; question: string; data: Record<string, unknown> };
      fits: boolean;
      why?: string;
      text?: string;
      decisions?: Array<Record<string, unknown>>;
    }
    // A value the hold's schema does not take is caught by the client, from the schema the run published.
    const unfit = await example<Outcome>('decide_hold.py', 'py-spender', '{"limit": "lots"}');
    expect(unfit).toMatchObject({ hold: { kind: 'spending', question: 'Let pay spend 500? (the limit is 100)' }, fits: false });
    expect(unfit.why).toContain("'lots'");
    const decided = await example<Outcome>('decide_hold.py', 'py-spender', '{"limit": 1000}');
    expect(decided).toMatchObject({ fits: true, text: 'paid', hold: { data: { tool: 'pay', amount: 500, limit: 100 } } });
    expect(decided.decisions).toEqual([
      expect.objectContaining({ kind: 'spending', toolName: 'pay', decidedBy: 'python-example', route: 'update', payload: { limit: 1000 } }),
    ]);
  }, 180_000);
});
