/**
 * Without External Storage (issue 18): every tool output fits in a payload, but the
 * conversation they add up to does not. The run's result, the input it continues as new with
 * (whose chunks the server counts together) and a stopped run's partial result each carry the
 * whole conversation; sent as they are, the server terminates the run with an INTERNAL
 * "… exceeds size limit". The run fails instead, OUT_OF_RANGE (or with its stop's status),
 * naming what grew, its size, the limit and the fix, in a failure small enough to be recorded.
 */
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { defineAgent } from '../src/define';
import { budget } from '../src/features/budget/budget';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { blob } from './fixtures/tools';
import { keelFailure } from './support/errors';
import { sharedTestWorker } from './support/harness';

const KB = 1000;

/** The fix every message names. */
const REMEDY =
  /External Storage is off \(externalStorage\.driver: none\), so the whole conversation \(\d+ messages\) must fit in one payload; turn on externalStorage with driver file or s3 in temporal\.yaml, or keep the conversation short with ContextCompression \(replaceHistory: true\)/;

/** How the runs of a chain under `runId` ended: statuses, failed workflow tasks, the run's failure, and whether any recorded the patch. */
async function ending(client: Client, runId: string): Promise<{ statuses: string[]; taskFailures: string[]; failure?: string; patched: boolean }> {
  // Visibility is eventually consistent: a run that has just ended may still be listed as running for a moment.
  const deadline = Date.now() + 15_000;
  for (;;) {
    const seen = await endingOnce(client, runId);
    if (!seen.statuses.includes('RUNNING') || Date.now() > deadline) return seen;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** What the executions of `runId` listed now ended as, their workflow task failures, the run's failure, and whether it has the inline-payload patch. */
async function endingOnce(client: Client, runId: string): Promise<{ statuses: string[]; taskFailures: string[]; failure?: string; patched: boolean }> {
  const statuses: string[] = [];
  const taskFailures: string[] = [];
  let failure: string | undefined;
  let patched = false;
  for await (const execution of client.workflow.list({ query: `WorkflowId = "${runId}"` })) {
    statuses.push(execution.status.name);
    const history = await client.workflow.getHandle(runId, execution.runId).fetchHistory();
    for (const event of history.events ?? []) {
      const taskFailure = event.workflowTaskFailedEventAttributes?.failure?.message;
      if (taskFailure) taskFailures.push(taskFailure);
      failure ??= event.workflowExecutionFailedEventAttributes?.failure?.message ?? undefined;
      const marker = event.markerRecordedEventAttributes;
      // keel's workflow calls no patched() (docs/deploys.md, "Upgrades"): a run records no patch marker.
      if (marker?.markerName === 'core_patch') patched = true;
    }
  }
  return { statuses: statuses.sort(), taskFailures, ...(failure !== undefined ? { failure } : {}), patched };
}

/** Replays the latest run of `runId` against the workflow bundle: the failure is deterministic. */
async function replays(client: Client, runId: string): Promise<void> {
  const history = await client.workflow.getHandle(runId).fetchHistory();
  await Worker.runReplayHistory({ workflowBundle: { codePath: inject('bundlePath') } }, history, runId);
}

/** A model that asks for a `size`-character blob `calls` times, then answers. */
function blobModel(name: string, calls: number, size: number, usage?: { totalTokens: number }) {
  return scriptedModel({
    name,
    keepRequests: 1,
    script: (_request, callIndex) =>
      callIndex < calls ? toolCallReply({ name: 'blob', input: { size } }, usage ? { usage } : {}) : textReply('all read', usage ? { usage } : {}),
  });
}

describe('without External Storage, a conversation that outgrows one payload', () => {
  // Three outputs of 800 KB: each well under the 1.94 MiB a payload may hold, 2.4 MB together.
  const three = blobModel('scripted/none-three', 3, 800 * KB);
  // Forty outputs of 60 KB: more than 32 messages, so the conversation continues as new in several chunks, each under the limit.
  const forty = blobModel('scripted/none-forty', 40, 60 * KB);
  // Budget stops the run before its fourth model call, with 2.4 MB of conversation.
  const spender = blobModel('scripted/none-spender', 10, 800 * KB, { totalTokens: 10 });
  const registry = new Registry().add(
    blob,
    three,
    forty,
    spender,
    defineAgent({ name: 'none-three', model: three.name, tools: ['blob'] }),
    defineAgent({ name: 'none-forty', model: forty.name, tools: ['blob'], maxTurns: 50 }),
    defineAgent({ name: 'none-spender', model: spender.name, tools: ['blob'], use: [budget({ limit: { totalTokens: 25 } })] }),
  );
  const worker = sharedTestWorker(registry, { externalStorage: { driver: 'none' } });

  it('fails the run before completing with a result over 2 MiB, naming the run, the size and the fix', async () => {
    // Turns: blob (800 KB), blob, blob, then the answer; the result then carries 2.4 MB.
    const { client } = worker();
    const runId = `none-result-${Date.now()}`;
    const handle = await client.start('none-three', 'read three blobs', { runId });
    const error = await keelFailure(handle.result());
    expect(error.status).toBe('OUT_OF_RANGE');
    expect(error.message).toMatch(new RegExp(`^the result of run ${runId} is 2\\.29 MiB, over the 1\\.94 MiB limit of one payload: `));
    expect(error.message).toMatch(REMEDY);
    expect(error.message).toContain('(8 messages)');
    expect(error.message).not.toMatch(/exceeds size limit/);
    expect(error.details).toMatchObject({ limitBytes: 2 * 1024 * 1024 - 64 * 1024 });
    expect(error.details.sizeBytes).toBeGreaterThan(2 * 1024 * 1024);
    // Every turn ran; the run failed (recorded, once), it was not terminated by the server.
    expect(three.requests.at(-1)!.callIndex).toBe(3);
    const ended = await ending(client.temporal, runId);
    expect(ended).toMatchObject({ statuses: ['FAILED'], taskFailures: [], patched: false });
    expect(ended.failure).toBe(error.message);
    await replays(client.temporal, runId);
    const status = await handle.status();
    expect(status).toMatchObject({ state: 'failed', error: { status: 'OUT_OF_RANGE', message: error.message } });
  });

  it('fails the run at continue-as-new when its conversation is over 2 MiB in chunks that each fit', async () => {
    // Turns: 40 blobs of 60 KB; past 2.3 MB of history the run would continue as new with 2.4 MB in 3 chunks.
    const { client } = worker();
    const runId = `none-continue-${Date.now()}`;
    const handle = await client.start('none-forty', 'read forty blobs', { runId, continueAsNewAt: { historyBytes: 2_300_000 } });
    const error = await keelFailure(handle.result());
    expect(error.status).toBe('OUT_OF_RANGE');
    expect(error.message).toMatch(
      new RegExp(
        `^the input of the next run of run ${runId} \\(continue-as-new: its conversation and state\\) is 2\\.\\d\\d MiB, over the 1\\.94 MiB limit of one payload: `,
      ),
    );
    expect(error.message).toMatch(REMEDY);
    const messages = Number(/\((\d+) messages\)/.exec(error.message)![1]);
    expect(messages).toBeGreaterThan(64);
    expect(forty.requests.at(-1)!.callIndex).toBeLessThan(40);
    const ended = await ending(client.temporal, runId);
    expect(ended).toMatchObject({ statuses: ['FAILED'], taskFailures: [], patched: false });
    expect(ended.failure).toBe(error.message);
    await replays(client.temporal, runId);
  });

  it("keeps a stopped run's failure recordable: its partial result leaves out the conversation and says so", async () => {
    // Turns: blob (10 tokens), blob (20), blob (30); Budget (25) stops the run before the fourth model call.
    const { client } = worker();
    const runId = `none-stopped-${Date.now()}`;
    const handle = await client.start('none-spender', 'spend', { runId });
    const error = await keelFailure(handle.result());
    expect(error.status).toBe('ABORTED');
    expect(error.message).toMatch(
      /^budget: used 30 of 25 totalTokens \(its partial result, 2\.29 MiB, is over the 1\.94 MiB limit of one payload and keeps only its text, usage and turns: /,
    );
    expect(error.message).toMatch(REMEDY);
    expect(error.details.partial).toEqual({ finishReason: 'aborted', text: '', usage: { totalTokens: 30 }, turns: 3 });
    const ended = await ending(client.temporal, runId);
    expect(ended).toMatchObject({ statuses: ['FAILED'], taskFailures: [], patched: false });
    await replays(client.temporal, runId);
    expect(await handle.status()).toMatchObject({ state: 'failed', finishReason: 'aborted', error: { status: 'ABORTED', message: error.message } });
  });
});

describe('without External Storage, a conversation that fits', () => {
  // Two outputs of 600 KB: 1.2 MB, continued as new past 1 MB of history, then answered.
  const two = blobModel('scripted/none-two', 2, 600 * KB);
  const registry = new Registry().add(blob, two, defineAgent({ name: 'none-two', model: two.name, tools: ['blob'] }));
  const worker = sharedTestWorker(registry, { externalStorage: { driver: 'none' } });

  it('continues as new and completes as before', async () => {
    const { client } = worker();
    const runId = `none-fits-${Date.now()}`;
    const result = await client.run('none-two', 'read two blobs', { runId, continueAsNewAt: { historyBytes: 1_000_000 } });
    expect(result.text).toBe('all read');
    expect(result.messages.filter((message) => message.role === 'tool')).toHaveLength(2);
    const ended = await ending(client.temporal, runId);
    // A run that fits records no marker: nothing changes in its history.
    expect(ended).toEqual({ statuses: ['COMPLETED', 'CONTINUED_AS_NEW'], taskFailures: [], patched: false });
  });
});
