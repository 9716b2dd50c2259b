/**
 * Finding runs with any Temporal client: each run keeps the search attributes `KeelAgent`
 * and `KeelStatus` current (the embedded dev server registers them), so a visibility query
 * lists the runs of an agent that wait for a person.
 */
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../src/define';
import { agents } from '../src/features/agents/agents';
import { toolApproval } from '../src/features/tool-approval/tool-approval';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { dangerous } from './fixtures/tools';
import { sharedTestWorker } from './support/harness';

const agent = `vis-${Date.now()}`;
const model = scriptedModel({
  name: `scripted/${agent}`,
  script: (request) =>
    request.messages.some((message) => message.role === 'tool') ? textReply('done') : toolCallReply({ name: 'dangerous', input: { v: 'x' } }),
});
const orchestrator = `${agent}-boss`;
const boss = scriptedModel({
  name: `scripted/${orchestrator}`,
  script: (request) =>
    request.messages.some((message) => message.role === 'tool')
      ? textReply('done')
      : toolCallReply({ name: `delegate_to_${agent}`, input: { task: 'clean up' } }),
});
const registry = new Registry()
  .add(dangerous, model, defineAgent({ name: agent, model: model.name, tools: [dangerous], use: [toolApproval()] }))
  .add(boss, defineAgent({ name: orchestrator, model: boss.name, use: [agents({ agents: [agent] })] }));
const worker = sharedTestWorker(registry);

/** Run ids a visibility query lists (visibility is eventually consistent: poll). */
async function listed(query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const execution of worker().client.temporal.workflow.list({ query })) ids.push(execution.workflowId);
  return ids.sort();
}

describe('search attributes', () => {
  it('lists the runs of an agent waiting for approval, and follows them as they finish', async () => {
    const { client } = worker();
    const waiting = await client.start(agent, 'go');
    const other = await client.start(agent, 'go');
    await expect.poll(async () => (await other.pendingHolds()).length, { timeout: 20_000 }).toBe(1);
    const [hold] = await other.pendingHolds();
    await other.approve(hold!.id);
    expect((await other.result()).text).toBe('done');
    await expect.poll(async () => (await waiting.pendingHolds()).length, { timeout: 20_000 }).toBe(1);

    await expect.poll(() => listed(`KeelAgent = '${agent}' AND KeelStatus = 'waiting'`), { timeout: 20_000, interval: 300 }).toEqual([waiting.runId]);
    await expect.poll(() => listed(`KeelAgent = '${agent}' AND KeelStatus = 'completed'`), { timeout: 20_000, interval: 300 }).toEqual([other.runId]);

    const [held] = await waiting.pendingHolds();
    await waiting.approve(held!.id);
    await waiting.result();
    await expect
      .poll(() => listed(`KeelAgent = '${agent}' AND KeelStatus = 'completed'`), { timeout: 20_000, interval: 300 })
      .toEqual([waiting.runId, other.runId].sort());
    expect(await listed(`KeelAgent = '${agent}' AND KeelStatus = 'waiting'`)).toEqual([]);
  });
});

describe('memo and summary', () => {
  it('shows the agent and the start of the prompt in describe', async () => {
    const { client } = worker();
    const handle = await client.start(agent, `Please   review the quarterly report ${'and more '.repeat(30)}`);
    const description = await handle.describe();
    const memo = description.memo;
    expect(memo).toEqual({ agent, prompt: expect.stringMatching(/^Please review the quarterly report and more .*…$/) as unknown });
    expect([...(memo as { prompt: string }).prompt]).toHaveLength(100);
    expect(await description.staticSummary?.()).toBe(`${agent}: ${(memo as { prompt: string }).prompt}`);
    await handle.cancel();
  });
});

describe('what the Temporal Web UI shows of a waiting run', () => {
  it("says what it waits for in the run's current details, with no timer in history, and gives a child run its summary", async () => {
    const { client } = worker();
    const handle = await client.start(orchestrator, 'go');
    const childRunId = `${handle.runId}/${agent}-1`;
    await expect.poll(async () => (await handle.pendingHolds()).length, { timeout: 20_000 }).toBe(1);
    const [hold] = await handle.pendingHolds();
    expect(hold!.id).toBe(`${agent}-1/i1`);
    // The Web UI reads the run's current details through the SDK's metadata query.
    const details = async (runId: string) =>
      (await client.temporal.workflow.getHandle(runId).query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';
    const shown = await details(handle.runId);
    expect(shown).toContain('**Waiting for a decision** on 1 hold:');
    expect(shown).toContain(`\`${hold!.id}\` (approval) on \`dangerous\`: Approve dangerous?`);
    expect(shown).toContain(`Send an Update** \`resume\`, e.g. \`{"interruptId":"${hold!.id}","approved":true,"reason":"..."}\``);
    expect(await details(childRunId)).toContain('`i1` (approval) on `dangerous`');
    // The child run carries `<agent>: <task>`, as a root run does.
    expect(await (await client.temporal.workflow.getHandle(childRunId).describe()).staticSummary?.()).toBe(`${agent}: clean up`);
    // The wait records nothing that reads as a ten-year timeout.
    const events = async (runId: string) => (await client.temporal.workflow.getHandle(runId).fetchHistory()).events ?? [];
    expect((await events(childRunId)).filter((event) => event.timerStartedEventAttributes)).toEqual([]);
    await handle.approve(hold!.id);
    expect((await handle.result()).text).toBe('done');
    expect(await details(childRunId).catch(() => '')).toBe('');
  });
});
