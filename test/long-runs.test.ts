/**
 * Long runs (issue 10): a run continues as new at turn boundaries once its history passes
 * its bounds, carrying the conversation, usage, turn count, call counters and what each
 * middleware keeps, under one run id. Nothing re-runs, and no run of the chain grows past
 * its bound.
 */
import { temporal } from '@temporalio/proto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, defineTool } from '../src/define';
import { budget } from '../src/features/budget/budget';
import { filesystem } from '../src/features/filesystem/filesystem';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { sharedTestWorker, type TestWorker } from './support/harness';

const calls = new Map<number, number>();
const chunk = defineTool({
  name: 'chunk',
  description: 'Returns 20 KiB.',
  input: z.object({ turn: z.number() }),
  run: ({ turn }) => {
    calls.set(turn, (calls.get(turn) ?? 0) + 1);
    return { turn, data: 'x'.repeat(20 * 1024) };
  },
});

const TURNS = 300;
const usage = { inputTokens: 10, outputTokens: 2 };
const loopModel = scriptedModel({
  name: 'scripted/long-loop',
  keepRequests: 1,
  script: [...Array.from({ length: TURNS }, (_, turn) => toolCallReply({ name: 'chunk', input: { turn } }, { usage })), textReply('all done', { usage })],
});
const registry = new Registry().add(chunk, loopModel, defineAgent({ name: 'long-loop', model: loopModel.name, tools: ['chunk'], maxTurns: TURNS }));
const worker = sharedTestWorker(registry);

/** Each run of a chain, oldest first: its Temporal run id and history bytes. */
async function chain(worker: TestWorker, runId: string): Promise<Array<{ runId: string; bytes: number; status: string }>> {
  const runs: Array<{ runId: string; bytes: number; status: string; started: number }> = [];
  for await (const execution of worker.client.temporal.workflow.list({ query: `WorkflowId = "${runId}"` })) {
    const history = await worker.client.temporal.workflow.getHandle(runId, execution.runId).fetchHistory();
    runs.push({
      runId: execution.runId,
      bytes: temporal.api.history.v1.History.encode(history).finish().length,
      status: execution.status.name,
      started: execution.startTime.getTime(),
    });
  }
  return runs.sort((a, b) => a.started - b.started).map(({ started: _started, ...run }) => run);
}

describe('continue-as-new', () => {
  it(`completes a ${TURNS}-turn run with 20 KiB of tool output per turn: usage summed, no call repeated, every run of the chain under 5 MiB`, async () => {
    const { client } = worker();
    const handle = await client.start('long-loop', 'go');
    const result = await handle.result();
    expect(result.text).toBe('all done');
    expect(result.turns).toBe(TURNS + 1);
    expect(result.usage).toMatchObject({ inputTokens: 10 * (TURNS + 1), outputTokens: 2 * (TURNS + 1) });
    expect(result.messages.filter((message) => message.role === 'tool')).toHaveLength(TURNS);
    expect([...calls.values()].every((count) => count === 1)).toBe(true);
    expect(calls.size).toBe(TURNS);
    // The one run id shows the whole run.
    const status = await handle.status();
    expect(status).toMatchObject({ state: 'completed', turn: TURNS + 1 });
    const runs = await chain(worker(), handle.runId);
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const run of runs) expect(run.bytes).toBeLessThan(5 * 1024 * 1024);
    expect(runs.slice(0, -1).every((run) => run.status === 'CONTINUED_AS_NEW')).toBe(true);
    expect(runs.at(-1)!.status).toBe('COMPLETED');
    // The whole conversation goes to the model each turn (quadratic bytes in all): allow for a busy machine.
  }, 300_000);

  it('carries what middleware keep: a read before the move lets an edit after it go through, and a budget goes on counting', async () => {
    const root = mkdtempSync(join(tmpdir(), 'keel-can-'));
    writeFileSync(join(root, 'notes.txt'), 'alpha\n');
    const model = scriptedModel({
      name: 'scripted/can-carry',
      script: [
        toolCallReply({ name: 'read_file', input: { filePath: 'notes.txt' } }, { usage: { totalTokens: 10 } }),
        toolCallReply(
          { name: 'edit_file', input: { filePath: 'notes.txt', edits: [{ oldString: 'alpha', newString: 'beta' }] } },
          { usage: { totalTokens: 10 } },
        ),
        toolCallReply({ name: 'list_files', input: {} }, { usage: { totalTokens: 10 } }),
        textReply('never', { usage: { totalTokens: 10 } }),
      ],
    });
    registry.add(
      model,
      defineAgent({
        name: 'can-carry',
        model: model.name,
        use: [budget({ limit: { totalTokens: 30 } }), filesystem({ rootDirectory: root, allowWriteAccess: true })],
        maxTurns: 10,
      }),
    );
    // One event over the bound: every turn after a run's first moves to a new run.
    const handle = await worker().client.start('can-carry', 'edit it', { continueAsNewAt: { historyEvents: 1 } });
    await expect(handle.result()).rejects.toThrow(/used 30 of 30 totalTokens/);
    expect(readFileSync(join(root, 'notes.txt'), 'utf8')).toBe('beta\n');
    const runs = await chain(worker(), handle.runId);
    expect(runs.length).toBeGreaterThanOrEqual(3);
    // The scripted model's call counter went on across runs: call 3 got reply 3 (the failing budget stops before call 4).
    expect(model.requests).toHaveLength(3);
  });
});
