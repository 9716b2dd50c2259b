/**
 * Other Temporal clients drive keel in plain JSON: examples/python/approve_run.py (the
 * official Python SDK, installed from PyPI into .keel/python by this test) starts a run,
 * approves its held call with the `resume` update and reads the result.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../src/define';
import { toolApproval } from '../src/middleware/tool-approval';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { dangerous } from './fixtures/tools';
import { sharedTestWorker } from './support/harness';
import { ROOT } from './support/processes';

/** The Temporal Python SDK version the example is run with. */
const TEMPORALIO = '1.35.0';
const VENV = join(ROOT, '.keel', 'python');
const PYTHON = join(VENV, 'bin', 'python');

const run = promisify(execFile);

/** A virtualenv with temporalio from PyPI (kept in .keel/, git-ignored, made once), made before the worker starts. */
beforeAll(async () => {
  const installed =
    existsSync(PYTHON) && (await run(PYTHON, ['-c', 'import temporalio; print(temporalio.__version__)'], { encoding: 'utf8' })).stdout.trim() === TEMPORALIO;
  if (!installed) {
    await run('python3', ['-m', 'venv', VENV]);
    await run(join(VENV, 'bin', 'pip'), ['install', '--quiet', `temporalio==${TEMPORALIO}`]);
  }
}, 180_000);

const model = scriptedModel({ name: 'scripted/py-approve', script: [toolCallReply({ name: 'dangerous', input: { v: '/tmp/x' } }), textReply('cleaned up')] });
const registry = new Registry().add(dangerous, model, defineAgent({ name: 'py-approve', model: model.name, tools: [dangerous], use: [toolApproval()] }));
const worker = sharedTestWorker(registry);

describe('a Python client', () => {
  it('starts a run, approves its held call and reads the result, in plain JSON', async () => {
    const { config, taskQueue } = worker();
    // Asynchronously: the keel worker runs in this process and must keep serving the run.
    const script = run(PYTHON, [join(ROOT, 'examples', 'python', 'approve_run.py'), config.temporal.address!, taskQueue, 'py-approve'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    const { stdout: output } = await script.catch((error: Error & { stderr?: string }) => {
      throw new Error(`${error.message}\n${error.stderr ?? ''}`);
    });
    const result = JSON.parse(output.trim().split('\n').at(-1)!) as { runId: string; held: string; decided: string[]; text: string; turns: number };
    expect(result).toMatchObject({ held: 'dangerous', text: 'cleaned up', turns: 2 });
    expect(result.decided).toHaveLength(1);
    // The approval reached the tool: its output is in the conversation the model saw next.
    expect(JSON.stringify(model.requests.at(-1)!.request.messages)).toContain('"deleted":"/tmp/x"');
  }, 180_000);
});
