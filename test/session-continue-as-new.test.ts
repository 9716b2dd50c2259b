/**
 * A session continues-as-new between turns when Temporal suggests it, carrying its state:
 * on a dev server of its own that suggests it after 40 history events, a session of many
 * turns moves to new runs and keeps its history, snapshots and usage.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineAgent } from '../src/define';
import { scriptedModel, textReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { startDevServer, type DevServer } from '../src/server/dev-server';
import { freePort } from './support/free-port';
import { startTestWorker, type TestWorker } from './support/harness';

let server: DevServer;
let worker: TestWorker;
const model = scriptedModel({
  name: 'scripted/long-session',
  script: (request) => textReply(`turn ${request.messages.filter((message) => message.role === 'user').length}`, { usage: { inputTokens: 1 } }),
});

beforeAll(async () => {
  server = await startDevServer({
    binary: inject('temporalBinary'),
    port: await freePort(),
    headless: true,
    logLevel: 'error',
    dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 40 },
  });
  worker = await startTestWorker(new Registry().add(model, defineAgent({ name: 'long-session', model: model.name, session: 'server' })), {
    temporal: { address: server.address },
  });
});
afterAll(async () => {
  await worker?.stop();
  await server?.stop();
});

describe('session continue-as-new', () => {
  it('moves to a new run between turns and keeps the history, the snapshot chain and the usage', async () => {
    const session = worker.client.session('long-session', 'many-turns');
    const handle = worker.client.temporal.workflow.getHandle(session.workflowId);
    const outputs = [];
    for (let turn = 1; turn <= 8; turn++) outputs.push(await session.send(`message ${turn}`, { requestId: `request-${turn}` }));
    expect(outputs.map((output) => output.text)).toEqual(['turn 1', 'turn 2', 'turn 3', 'turn 4', 'turn 5', 'turn 6', 'turn 7', 'turn 8']);
    expect(outputs.at(-1)!.usage).toEqual({ inputTokens: 1 });
    expect(outputs.at(-1)!.sessionUsage).toEqual({ inputTokens: 8 });
    // Earlier runs of the session continued as new; the latest one runs on.
    const runs: string[] = [];
    for await (const execution of worker.client.temporal.workflow.list({ query: `WorkflowId = "${session.workflowId}"` })) runs.push(execution.status.name);
    expect(runs.filter((status) => status === 'CONTINUED_AS_NEW').length).toBeGreaterThan(0);
    expect(runs.filter((status) => status === 'RUNNING')).toHaveLength(1);
    const latest = await session.snapshot();
    expect(latest).toMatchObject({ snapshotId: outputs.at(-1)!.snapshotId, parentId: outputs.at(-2)!.snapshotId, messageCount: 16 });
    expect(await session.snapshot(outputs[0]!.snapshotId)).toMatchObject({ status: 'completed' });
    expect((await handle.describe()).status.name).toBe('RUNNING');
    // an invocation sent again after the session moved to a new run still gets its first answer, with no new turn
    const calls = model.requests.length;
    expect(await session.send('message 1', { requestId: 'request-1' })).toEqual(outputs[0]);
    expect(model.requests).toHaveLength(calls);
  });
});
