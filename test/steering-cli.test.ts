/**
 * `keel steer` with real processes (a worker process, the CLI): the message reaches a running
 * run (with --interrupt, at once, cancelling its slow model call), `keel status` lists it, and
 * bad input (exit 2) or a run that has ended (exit 1) is refused with why.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { killAfterEach, runKeel, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);

const { configPath: config } = writeTestConfig('steer-cli', {
  server: { enabled: false },
  agents: [{ name: 'ponderer', description: 'Thinks slowly.', model: 'scripted/ponderer' }],
  models: [
    {
      name: 'scripted/ponderer',
      // Call 1 would take a minute (a steer with --interrupt cancels it); call 2 answers the message.
      script: [{ delayMs: 60_000, text: 'a slow answer' }, { text: 'the steered answer' }],
    },
  ],
});

async function keel(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runKeel([...args, '--config', config]);
}

describe('keel steer', () => {
  it('steers a running run with --interrupt, shows it in keel status, and refuses bad input and an ended run', async () => {
    const worker = track(spawnKeel(['worker', '--config', config]));
    await worker.waitFor(/keel: worker \d+ on task queue/);
    const started = await keel(['run', 'ponderer', 'think', '--detach', '--json']);
    expect(started.code, started.stderr).toBe(0);
    const { runId } = JSON.parse(started.stdout) as { runId: string };

    const noText = await keel(['steer', runId]);
    expect(noText.code).toBe(2);
    expect(noText.stderr).toContain('keel steer needs the text of the message');

    // The run's first model call must be under way before --interrupt has something to cancel.
    await expect
      .poll(async () => (JSON.parse((await keel(['status', runId, '--json'])).stdout) as { turn: number }).turn, { timeout: 30_000, interval: 250 })
      .toBe(1);
    const empty = await keel(['steer', runId, ' ', '--json']);
    expect(empty.code).toBe(2);
    expect(JSON.parse(empty.stdout)).toEqual({ error: { status: 'INVALID_ARGUMENT', message: 'invalid steer: text: must not be empty' } });

    const steered = await keel(['steer', runId, 'answer', 'now', '--interrupt', '--id', 'cli-steer-1', '--json']);
    expect(steered.code, steered.stderr).toBe(0);
    expect(JSON.parse(steered.stdout)).toMatchObject({
      runId,
      id: 'cli-steer-1',
      text: 'answer now',
      state: 'pending',
      interrupt: true,
      cancelledModelCall: true,
    });

    await expect
      .poll(async () => JSON.parse((await keel(['status', runId, '--json'])).stdout) as { status: string; text?: string }, { timeout: 30_000, interval: 250 })
      .toMatchObject({ status: 'completed', text: 'the steered answer' });
    const status = JSON.parse((await keel(['status', runId, '--json'])).stdout) as { steering?: unknown[] };
    expect(status.steering).toEqual([expect.objectContaining({ id: 'cli-steer-1', state: 'applied', turn: 1, cancelledModelCall: true })]);

    const late = await keel(['steer', runId, 'too late']);
    expect(late.code).toBe(1);
    expect(late.stderr).toContain(`keel steer: run "${runId}" has ended (completed); it takes no more steering`);
  });
});
