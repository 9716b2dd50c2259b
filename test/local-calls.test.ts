/**
 * Local calls (docs/local-calls.md): a model or tool chosen `local` runs as a Temporal local
 * activity in the worker that runs the run's workflow task. History then holds a marker per
 * call and no activity task; retry, Fallback, holds, idempotency keys and usage behave as with
 * regular activities, and a worker SIGKILLed mid-call has the call run again elsewhere with the
 * same key (test/crash.test.ts has the regular activity's case).
 */
import { z } from 'zod';
import { describe, expect, it, type ExpectStatic } from 'vitest';
import { temporal } from '@temporalio/proto';
import { defineAgent, defineTool } from '../src/define';
import { fallback } from '../src/features/fallback/fallback';
import { toolApproval } from '../src/features/tool-approval/tool-approval';
import { errorReply, scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { InfrastructureError } from '../src/activities/infrastructure-error';
import { Registry } from '../src/registry';
import { loadRegistry } from '../src/worker/load-registry';
import { defineConfig } from '../src/config/load';
import type { RunHandle } from '../src/client/keel-client';
import type { RunEvent } from '../src/client/run-events';
import { sharedTestWorker } from './support/harness';

const EventType = temporal.api.enums.v1.EventType;

/** What `note` saw on each attempt: its label, attempt and idempotency key. */
const notes: Array<{ label: string; attempt: number; key: string }> = [];
/** Labels whose first attempt fails retryably (the activity's retry policy runs it again). */
const flakyLabels = new Set<string>();
const note = defineTool({
  name: 'note',
  description: 'Notes that it ran.',
  input: z.object({ label: z.string() }),
  run: ({ label }, { attempt, idempotencyKey, heartbeat }) => {
    heartbeat({ label });
    notes.push({ label, attempt, key: idempotencyKey });
    if (flakyLabels.has(label) && attempt === 1) throw new InfrastructureError('transient');
    return { noted: label };
  },
});
/** Holds every call for a decision; answers with what the decision sent. */
const ask = defineTool({
  name: 'ask',
  description: 'Asks a person.',
  input: z.object({ question: z.string() }),
  run: ({ question }, { interrupt, resumed }) => (resumed === undefined ? interrupt({ question }) : { answer: resumed }),
});

/** Two turns, each one `note` call labelled `<label>-<turn>`, then `done`, each with usage. */
function noteModel(name: string, label: string, options: { local?: boolean } = {}) {
  return {
    ...scriptedModel({
      name,
      script: [
        toolCallReply({ name: 'note', input: { label: `${label}-1` } }, { usage: { inputTokens: 10, outputTokens: 1 } }),
        toolCallReply({ name: 'note', input: { label: `${label}-2` } }, { usage: { inputTokens: 20, outputTokens: 1 } }),
        textReply('done', { usage: { inputTokens: 30, outputTokens: 2 } }),
      ],
    }),
    ...options,
  };
}

const localModel = noteModel('scripted/local-note', 'local', { local: true });
const remoteModel = noteModel('scripted/remote-note', 'remote');
const overriddenModel = noteModel('scripted/overridden-note', 'overridden', { local: true });
const flakyModel = noteModel('scripted/flaky-note', 'flaky', { local: true });
const broken = { ...scriptedModel({ name: 'scripted/local-broken', script: [errorReply('UNAVAILABLE', 'down for good')] }), local: true };
const backup = { ...scriptedModel({ name: 'scripted/local-backup', script: [textReply('from the backup')] }), local: true };
const asking = scriptedModel({ name: 'scripted/local-ask', script: [toolCallReply({ name: 'ask', input: { question: 'go?' } }), textReply('asked')] });
const approving = scriptedModel({
  name: 'scripted/local-approve',
  script: [toolCallReply({ name: 'note', input: { label: 'approved-1' } }), textReply('approved')],
});

const streaming = { ...scriptedModel({ name: 'scripted/local-stream', script: [{ stream: ['Lisbon ', 'is ', 'sunny'], chunkDelayMs: 300 }] }), local: true };

const registry = new Registry().add(
  streaming,
  defineAgent({ name: 'local-stream', model: streaming.name }),
  note,
  ask,
  localModel,
  remoteModel,
  overriddenModel,
  flakyModel,
  broken,
  backup,
  asking,
  approving,
  defineAgent({ name: 'local-all', model: localModel.name, tools: [note], local: { tools: ['note'] } }),
  defineAgent({ name: 'remote-all', model: remoteModel.name, tools: [note] }),
  defineAgent({ name: 'local-overridden', model: overriddenModel.name, tools: [note], local: { models: false, tools: false } }),
  defineAgent({ name: 'local-flaky', model: flakyModel.name, tools: [note], local: { tools: true } }),
  defineAgent({ name: 'local-fallback', model: broken.name, use: [fallback({ models: [{ name: backup.name }] })] }),
  defineAgent({ name: 'local-ask', model: asking.name, tools: [ask], local: { models: true, tools: true } }),
  defineAgent({ name: 'local-approve', model: approving.name, tools: [note], local: { models: true, tools: true }, use: [toolApproval({})] }),
);
const worker = sharedTestWorker(registry);

/** Activity types the run scheduled as regular activities, and its local activities' markers. */
async function callsOf(workflowId: string): Promise<{ activities: string[]; markers: number; events: number }> {
  const events = (await worker().client.temporal.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  return {
    activities: events
      .filter((event) => event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((event) => event.activityTaskScheduledEventAttributes!.activityType!.name!),
    markers: events.filter(
      (event) => event.eventType === EventType.EVENT_TYPE_MARKER_RECORDED && event.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    ).length,
    events: events.length,
  };
}

/** The run's first pending hold, once it has one (`expect` is the test's own: the tests run side by side). */
async function firstHold(handle: RunHandle, expect: ExpectStatic) {
  await expect.poll(async () => (await handle.pendingHolds()).length, { timeout: 20_000, interval: 50 }).toBe(1);
  return (await handle.pendingHolds())[0]!;
}

describe.concurrent('local calls', () => {
  it('run model and tool calls as local activities: a marker each in history, no activity task, the same result, usage and keys', async () => {
    const local = await worker().client.start('local-all', 'go');
    const remote = await worker().client.start('remote-all', 'go');
    const [localResult, remoteResult] = await Promise.all([local.result(), remote.result()]);
    expect(localResult.text).toBe('done');
    expect(remoteResult.text).toBe('done');
    expect(localResult.usage).toEqual(remoteResult.usage);
    expect(localResult.usage).toMatchObject({ inputTokens: 60, outputTokens: 4 });
    expect(localResult.messages.map((message) => message.role)).toEqual(remoteResult.messages.map((message) => message.role));

    const localCalls = await callsOf(local.runId);
    // The agent lookup stays a regular activity (a middleware's setup needs a workflow task of its own).
    expect(localCalls.activities).toEqual(['resolveAgent']);
    expect(localCalls.markers).toBe(5);
    const remoteCalls = await callsOf(remote.runId);
    expect(remoteCalls.activities).toEqual(['resolveAgent', 'callModel', 'callTool', 'callModel', 'callTool', 'callModel']);
    expect(remoteCalls.markers).toBe(0);
    expect(localCalls.events).toBeLessThan(remoteCalls.events);

    // The key a local tool call sees has the regular call's form, and differs for each call.
    const keys = notes.filter((entry) => entry.label.startsWith('local-')).map((entry) => entry.key);
    expect(keys).toHaveLength(2);
    expect(new Set(keys).size).toBe(2);
    for (const key of keys) expect(key).toMatch(new RegExp(`^${local.runId}/[0-9a-f-]{36}/\\d+$`));
  });

  it("an agent's local: false runs its calls as regular activities even when the model says local", async () => {
    const handle = await worker().client.start('local-overridden', 'go');
    expect((await handle.result()).text).toBe('done');
    const calls = await callsOf(handle.runId);
    expect(calls.markers).toBe(0);
    expect(calls.activities.filter((type) => type === 'callModel')).toHaveLength(3);
  });

  it("retries a failed local tool call under the tool activity's retry policy, with the same key", async () => {
    flakyLabels.add('flaky-1');
    const handle = await worker().client.start('local-flaky', 'go');
    expect((await handle.result()).text).toBe('done');
    const attempts = notes.filter((entry) => entry.label === 'flaky-1');
    expect(attempts.map((entry) => entry.attempt)).toEqual([1, 2]);
    expect(attempts[1]!.key).toBe(attempts[0]!.key);
    expect((await callsOf(handle.runId)).activities).toEqual(['resolveAgent']);
  });

  it('Fallback moves from a failing local model to the next', async () => {
    const handle = await worker().client.start('local-fallback', 'hi');
    expect((await handle.result()).text).toBe('from the backup');
  });

  it("a local tool's own interrupt holds the run; the decision restarts it with the payload", async ({ expect }) => {
    const handle = await worker().client.start('local-ask', 'go');
    const hold = await firstHold(handle, expect);
    expect(hold).toMatchObject({ toolName: 'ask', input: { question: 'go?' } });
    await handle.restart(hold.id, { says: 'yes' });
    const result = await handle.result();
    expect(result.text).toBe('asked');
    expect(JSON.stringify(result.messages)).toContain('{"answer":{"says":"yes"}}');
  });

  it('ToolApproval holds a local tool call until approved, then runs it once', async ({ expect }) => {
    const handle = await worker().client.start('local-approve', 'go');
    const hold = await firstHold(handle, expect);
    expect(notes.filter((entry) => entry.label === 'approved-1')).toHaveLength(0);
    await handle.approve(hold.id);
    expect((await handle.result()).text).toBe('approved');
    expect(notes.filter((entry) => entry.label === 'approved-1')).toHaveLength(1);
  });
});

describe.concurrent('local calls and clients', () => {
  it("a local model call's streamed text reaches no client while it runs: events() yields it whole when the call ends", async () => {
    const handle = await worker().client.start('local-stream', 'weather?');
    const events: RunEvent[] = [];
    for await (const event of handle.events({ intervalMs: 50 })) events.push(event);
    const texts = events.filter((event): event is Extract<RunEvent, { type: 'text' }> => event.type === 'text');
    expect(texts.filter((event) => !event.final)).toEqual([]);
    expect(texts.map((event) => event.delta).join('')).toBe('Lisbon is sunny');
    expect(events.at(-1)).toMatchObject({ type: 'end' });
  });
});

describe.concurrent('local calls in config', () => {
  it('a model entry says local, an agent says which of its tools, and a tool the agent lacks is refused naming where', async () => {
    const base = {
      models: [{ name: 'scripted/c', provider: 'scripted' as const, script: [{ text: 'ok' }], local: true }],
    };
    const registry = await loadRegistry(defineConfig(base));
    expect(registry.models.get('scripted/c')?.local).toBe(true);
    await expect(loadRegistry(defineConfig({ ...base, agents: [{ name: 'a', model: 'scripted/c', local: { tools: ['nope'] } }] }))).rejects.toThrow(
      /agents\[0\]: defineAgent\("a"\): local\.tools\[0\]: "nope" is not one of the agent's tools/,
    );
    expect(() => defineConfig({ ...base, agents: [{ name: 'a', model: 'scripted/c', local: { model: true } }] } as never)).toThrow(/local/);
  });
});
