/**
 * `ctx.idempotencyKey`: tool authors dedupe side effects on it, so it must differ for every
 * distinct tool call of a run's whole chain (continue-as-new after every turn, a run id used
 * again, sub-agents) and must be new for a call that a `workflow reset` runs again. (The same
 * key on every attempt of one call, after a SIGKILL too, is checked in crash.test.ts.)
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineAgent, defineTool } from '../src/define';
import { agents } from '../src/features/agents/agents';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { sharedTestWorker } from './support/harness';
import { resetToFirstTask } from './support/history';

/** Every key `record_key` saw, with the label it was called with. */
const seen: Array<{ label: string; key: string }> = [];
const recordKey = defineTool({
  name: 'record_key',
  description: 'Records its idempotency key.',
  input: z.object({ label: z.string() }),
  run: ({ label }, { idempotencyKey }) => {
    seen.push({ label, key: idempotencyKey });
    return { ok: true };
  },
});
const keysOf = (prefix: string) => seen.filter((entry) => entry.label.startsWith(prefix)).map((entry) => entry.key);

/** Asks for `record_key` once per turn for `turns` turns, labelled `<label>-<turn>`, then answers done. */
function keyModel(name: string, label: string, turns: number) {
  return scriptedModel({
    name,
    script: (request) => {
      const done = request.messages.filter((message) => message.role === 'tool').length;
      return done < turns ? toolCallReply({ name: 'record_key', input: { label: `${label}-${done + 1}` } }) : textReply('done');
    },
  });
}

const registry = new Registry().add(recordKey);
const worker = sharedTestWorker(registry);
let agentCount = 0;

/** A fresh agent whose run calls record_key `turns` times (one call a turn). */
function keyAgent(
  turns: number,
  extra: { use?: Parameters<typeof defineAgent>[0]['use']; script?: ReturnType<typeof scriptedModel> } = {},
): { name: string; label: string } {
  const name = `keys-${++agentCount}`;
  const label = `${name}-${Math.random().toString(36).slice(2, 8)}`;
  const model = extra.script ?? keyModel(`scripted/${name}`, label, turns);
  registry.add(model, defineAgent({ name, model: model.name, tools: [recordKey], ...(extra.use ? { use: extra.use } : {}) }));
  return { name, label };
}

describe.concurrent('idempotency keys', () => {
  it('differ for each of 12 tool calls of a run that continues as new after every turn', async () => {
    // 12 turns, each one record_key call; continueAsNewAt of 1 event makes every turn boundary a new run of the chain.
    const { name, label } = keyAgent(12);
    const handle = await worker().client.start(name, 'go', { continueAsNewAt: { historyEvents: 1 }, maxTurns: 20 });
    const result = await handle.result();
    expect(result.text).toBe('done');
    const keys = keysOf(label);
    expect(keys).toHaveLength(12);
    expect(new Set(keys).size).toBe(12);
    // The chain really had a run per turn: the keys name 12 different executions of the one run id.
    const executions = new Set(keys.map((key) => key.slice(handle.runId.length + 1).split('/')[0]));
    expect(executions.size).toBe(12);
    for (const key of keys) expect(key.startsWith(`${handle.runId}/`)).toBe(true);
  });

  it('differ between two runs started with the same run id, sub-agent runs included', async () => {
    // Each run: record_key, then a delegation to a sub-agent that calls record_key, then done.
    const child = keyAgent(1);
    const parentName = `keys-${++agentCount}`;
    const parentLabel = `${parentName}-parent`;
    const parentModel = scriptedModel({
      name: `scripted/${parentName}`,
      script: (request) => {
        const done = request.messages.filter((message) => message.role === 'tool').length;
        if (done === 0) return toolCallReply({ name: 'record_key', input: { label: parentLabel } });
        if (done === 1) return toolCallReply({ name: `delegate_to_${child.name}`, input: { task: 'record' } });
        return textReply('done');
      },
    });
    registry.add(parentModel, defineAgent({ name: parentName, model: parentModel.name, tools: [recordKey], use: [agents({ agents: [child.name] })] }));
    const runId = `keys-reused-${Date.now()}`;
    for (let run = 0; run < 2; run++) expect((await worker().client.run(parentName, 'go', { runId })).text).toBe('done');
    const parentKeys = keysOf(parentLabel);
    const childKeys = keysOf(child.label);
    expect(parentKeys).toHaveLength(2);
    expect(childKeys).toHaveLength(2);
    expect(new Set([...parentKeys, ...childKeys]).size).toBe(4);
    expect(childKeys.every((key) => key.startsWith(`${runId}/${child.name}-1/`))).toBe(true);
  });

  it('is new for a call that a reset to before it runs again', async () => {
    // turn 1: record_key; turn 2: done. Then a reset to the first workflow task runs turn 1 again.
    const { name, label } = keyAgent(1);
    const handle = await worker().client.start(name, 'go');
    await handle.result();
    const [before] = keysOf(label);
    const newRunId = await resetToFirstTask(worker().client.temporal, worker().config.temporal.namespace, handle.runId);
    await worker().client.temporal.workflow.getHandle(handle.runId, newRunId).result();
    const keys = keysOf(label);
    expect(keys).toHaveLength(2);
    // The reset run is a new execution: the call it runs again is a new call (its first result is not in the new run's history).
    expect(keys[1]).toBe(`${handle.runId}/${newRunId}/${before!.split('/').at(-1)}`);
    expect(keys[1]).not.toBe(before);
  });
});
