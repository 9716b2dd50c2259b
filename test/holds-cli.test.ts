/**
 * Human in the loop with real processes: a run waiting for approval survives its worker
 * being killed; decisions arrive through `keel approve` / `keel deny`; refused decisions exit
 * 1 with the validator's message; `keel run` says it is waiting and how to decide.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, runKeel, killAfterEach, spawnKeel, writeTestConfig } from './support/processes';

const track = killAfterEach(afterEach);

/** A config whose `guarded` agent needs approval for record_fast and has a 10-token budget that interrupts. */
function setup(): { dir: string; config: string; env: Record<string, string> } {
  const { dir, configPath: config } = writeTestConfig('hitl', {
    server: { enabled: false },
    modules: [join(ROOT, 'test', 'fixtures', 'crash-agents.ts')],
    models: [{ name: 'scripted/guarded', script: [{ toolRequests: [{ name: 'record_fast', input: {} }], usage: { inputTokens: 20 } }, { text: 'all done' }] }],
    agents: [
      {
        name: 'guarded',
        model: 'scripted/guarded',
        tools: ['record_fast'],
        use: [{ name: 'toolApproval' }, { name: 'budget', config: { limit: { inputTokens: 10 }, interrupt: true } }],
      },
    ],
  });
  return { dir, config, env: { KEEL_TEST_DIR: dir } };
}

async function status(
  config: string,
  runId: string,
): Promise<{ status: string; interrupts: Array<{ id: string; kind: string; toolName: string }>; text?: string }> {
  const { stdout, code } = await runKeel(['status', runId, '--json', '--config', config]);
  expect(code).toBe(0);
  return JSON.parse(stdout);
}

async function waitForHold(config: string, runId: string, kind: string): Promise<string> {
  let id: string | undefined;
  await expect
    .poll(async () => (id = (await status(config, runId)).interrupts.find((interrupt) => interrupt.kind === kind)?.id), { timeout: 30_000, interval: 300 })
    .toBeDefined();
  return id!;
}

describe('approval across a killed worker, through the CLI', () => {
  it('keeps waiting while its worker is SIGKILLed; decisions sent later complete it; the held tool runs once', async () => {
    // turn 1: record_fast is held by the gate (i1) → approved → held by the budget (i2, 20 of 10 input tokens) → approved → runs
    // turn 2: all done
    const { dir, config, env } = setup();
    const first = spawnKeel(['worker', '--config', config], { env });
    track(first);
    await first.waitFor(/keel: worker \d+ on task queue/);
    const started = await runKeel(['run', 'guarded', 'record', 'it', '--detach', '--json', '--config', config]);
    expect(started.code).toBe(0);
    const { runId } = JSON.parse(started.stdout);

    const approval = await waitForHold(config, runId, 'approval');
    expect((await status(config, runId)).status).toBe('waiting');
    first.kill('SIGKILL');
    await first.exited;
    const second = spawnKeel(['worker', '--config', config], { env });
    track(second);
    await second.waitFor(/keel: worker \d+ on task queue/);

    const unknown = await runKeel(['approve', runId, 'i77', '--config', config]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`unknown hold id "i77"; pending holds: ${approval}`);

    const approved = await runKeel(['approve', runId, approval, '--json', '--config', config]);
    expect(approved.code).toBe(0);
    expect(JSON.parse(approved.stdout)).toMatchObject({ runId, interruptId: approval, decided: [approval], approved: true });
    const again = await runKeel(['deny', runId, approval, '--config', config]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`hold ${approval} was already decided`);

    const budgetHold = await waitForHold(config, runId, 'budget');
    expect((await status(config, runId)).interrupts).toEqual([
      expect.objectContaining({
        id: budgetHold,
        kind: 'budget',
        toolName: 'record_fast',
        data: expect.objectContaining({ spent: { inputTokens: 20 }, limit: { inputTokens: 10 } }),
      }),
    ]);
    expect(existsSync(join(dir, 'fast.log'))).toBe(false);
    expect((await runKeel(['approve', runId, budgetHold, '--config', config])).code).toBe(0);

    await expect.poll(async () => (await status(config, runId)).status, { timeout: 30_000, interval: 300 }).toBe('completed');
    expect((await status(config, runId)).text).toBe('all done');
    expect(readFileSync(join(dir, 'fast.log'), 'utf8').trim().split('\n')).toHaveLength(1);
  });

  it('keel deny --reason refuses the budget hold and the run stops aborted', async () => {
    const { config, env } = setup();
    const worker = spawnKeel(['worker', '--config', config], { env });
    track(worker);
    await worker.waitFor(/keel: worker \d+ on task queue/);
    const { runId } = JSON.parse((await runKeel(['run', 'guarded', 'go', '--detach', '--json', '--config', config])).stdout);
    expect((await runKeel(['approve', runId, await waitForHold(config, runId, 'approval'), '--config', config])).code).toBe(0);
    const denied = await runKeel(['deny', runId, await waitForHold(config, runId, 'budget'), '--reason', 'too expensive', '--config', config]);
    expect(denied.code).toBe(0);
    await expect.poll(async () => (await status(config, runId)).status, { timeout: 30_000, interval: 300 }).toBe('failed');
    expect(await status(config, runId)).toMatchObject({
      finishReason: 'aborted',
      error: { status: 'ABORTED', message: 'budget: continuing past the limit was refused: too expensive' },
    });
  });

  it('keel run says the run is waiting and how to decide, and keeps waiting', async () => {
    const { config, env } = setup();
    const worker = spawnKeel(['worker', '--config', config], { env });
    track(worker);
    await worker.waitFor(/keel: worker \d+ on task queue/);
    const run = spawnKeel(['run', 'guarded', 'go', '--config', config], { env });
    track(run);
    await run.waitFor(/waiting for a decision on i1 \(approval\): record_fast\(\{\}\): Approve record_fast\?/);
    const runId = /run (run-[\w-]+) started/.exec(run.output())![1]!;
    expect(run.output()).toContain(`approve: npx keel approve ${runId} i1`);
    expect(run.output()).toContain(`deny:    npx keel deny ${runId} i1 --reason "..."`);
    expect((await runKeel(['approve', runId, 'i1', '--config', config])).code).toBe(0);
    await run.waitFor(/waiting for a decision on i2 \(budget\): record_fast\(\{\}\): Usage budget reached: used 20 of 10 inputTokens/);
    expect((await runKeel(['approve', runId, 'i2', '--config', config])).code).toBe(0);
    expect(await run.exited).toBe(0);
    expect(run.output()).toContain('all done');
  });
});
