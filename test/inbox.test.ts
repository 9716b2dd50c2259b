/**
 * What a person deciding a hold is shown, by `keel ui`'s inbox (its HTTP API) and `keel holds`:
 * the hold's question as its title, the held call with its input, what the user asked, what
 * the agent was doing, the agent holding the call (a sub-agent's own), a readable label of its
 * run and that run's view, for a top-level hold and a sub-agent's alike. And a sub-agent waiting
 * on a hold is `waiting` in every view, its hold counted once in the runs list, under its parent.
 * A real worker (test/fixtures/ui-agents.ts: `travel` delegates to `clerk`, whose `book_train`
 * is held by ToolApproval), the UI server and the `keel` command line, on the shared dev server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HoldView } from '../src/client/holds';
import type { RunListing } from '../src/client/runs';
import { loadConfig } from '../src/config/load';
import { Registry } from '../src/registry';
import { startUiServer, type UiServer } from '../src/ui/server';
import type { RunView } from '../src/ui/run-view';
import { clerk, clerkModel, travel, travelModel } from './fixtures/ui-agents';
import { startTestWorker, type TestWorker } from './support/harness';
import { runKeel, writeTestConfig } from './support/processes';

let worker: TestWorker;
let ui: UiServer;
let configPath: string;

beforeAll(async () => {
  worker = await startTestWorker(new Registry().add(clerkModel, travelModel, clerk, travel));
  configPath = writeTestConfig('inbox', { taskQueue: worker.taskQueue }).configPath;
  ui = await startUiServer({ config: loadConfig({ path: configPath }), port: 0, token: undefined });
}, 60_000);
afterAll(async () => {
  await ui?.close();
  // The last test stops the worker itself.
  await worker?.stop().catch(() => undefined);
});

const api = async <T>(path: string): Promise<T> => (await (await fetch(`${ui.origin}${path}`)).json()) as T;
const keelJson = async <T>(args: string[]): Promise<T> => {
  const { code, stdout, stderr } = await runKeel([...args, '--json', '--config', configPath]);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as T;
};

/** The inbox's holds of these runs, once each run shows one. */
async function inboxOf(...runIds: string[]): Promise<HoldView[]> {
  const of = (holds: HoldView[]) => runIds.map((runId) => holds.filter((hold) => hold.runId === runId));
  await expect
    .poll(async () => of((await api<{ holds: HoldView[] }>('/api/inbox')).holds).map((holds) => holds.length), { timeout: 30_000 })
    .toEqual(runIds.map(() => 1));
  return of((await api<{ holds: HoldView[] }>('/api/inbox')).holds).flat();
}

describe('the inbox and keel holds', () => {
  it('title each hold with its question and show the held call, the prompt, what the agent was doing, its own agent, a readable label and its run', async () => {
    // travel (root) delegates to clerk (sub-agent), whose book_train waits; clerk run on its own waits at the top.
    const nested = await worker.client.start('travel', 'get me to Paris');
    const top = await worker.client.start('clerk', 'two seats to Paris, please');
    const [sub, own] = await inboxOf(nested.runId, top.runId);
    const childRunId = `${nested.runId}/clerk-1`;

    expect(sub).toMatchObject({
      runId: nested.runId,
      id: 'clerk-1/i1',
      kind: 'approval',
      question: 'Approve book_train?',
      toolName: 'book_train',
      inputText: '{"to":"Paris","seats":2}',
      prompt: 'get me to Paris',
      asked: 'book 2 seats to Paris',
      modelText: 'Booking 2 seats to Paris.',
      turn: 1,
      agent: 'clerk',
      label: 'clerk-1',
      path: [childRunId],
    });
    expect(own).toMatchObject({
      runId: top.runId,
      id: 'i1',
      question: 'Approve book_train?',
      inputText: '{"to":"Paris","seats":2}',
      prompt: 'two seats to Paris, please',
      modelText: 'Booking 2 seats to Paris.',
      agent: 'clerk',
      label: `run-${top.runId.slice(4, 12)}`,
    });
    expect(own!.path).toBeUndefined();
    // Each hold's run (where the call is held) has a view: the sub-agent's own, and the top-level run.
    for (const [runId, agent] of [
      [childRunId, 'clerk'],
      [top.runId, 'clerk'],
    ] as const) {
      const view = await api<RunView>(`/api/runs/${encodeURIComponent(runId)}`);
      expect(view.status).toMatchObject({ agent, state: 'waiting' });
    }

    // keel holds shows the same, the held call's input included, as JSON and as text.
    const listed = (await keelJson<{ holds: HoldView[] }>(['holds'])).holds;
    expect(listed.filter((hold) => hold.runId === nested.runId)).toEqual([sub]);
    expect(listed.filter((hold) => hold.runId === top.runId)).toEqual([own]);
    const text = await runKeel(['holds', '--config', configPath]);
    expect(text.code, text.stderr).toBe(0);
    const block = (runId: string) => text.stdout.split('\n\n').find((entry) => entry.includes(`keel approve ${runId} `)) ?? '';
    expect(block(nested.runId)).toContain('Approve book_train?');
    expect(block(nested.runId)).toContain('book_train({"to":"Paris","seats":2})');
    expect(block(nested.runId)).toContain('asked: get me to Paris');
    expect(block(nested.runId)).toContain('clerk-1 (agent clerk, turn 1) was asked: book 2 seats to Paris');
    expect(block(nested.runId)).toContain('model: Booking 2 seats to Paris.');
    expect(block(top.runId)).toContain(`${own!.label} (agent clerk, turn 1)`);
    expect(block(top.runId)).toContain('asked: two seats to Paris, please');

    await Promise.all([nested.cancel(), top.cancel()]);
  });

  it('show a sub-agent waiting on a hold as waiting everywhere, its hold counted once, on its own row under its parent', async () => {
    const nested = await worker.client.start('travel', 'again to Paris');
    await inboxOf(nested.runId);
    const childRunId = `${nested.runId}/clerk-1`;

    const parentView = await api<RunView>(`/api/runs/${encodeURIComponent(nested.runId)}`);
    expect(parentView.status.state).toBe('waiting');
    expect(parentView.children).toEqual([expect.objectContaining({ runId: childRunId, agent: 'clerk', state: 'waiting' })]);
    // The parent's view shows the sub-agent's hold with the sub-agent's own agent.
    expect(parentView.status.interrupts).toEqual([expect.objectContaining({ id: 'clerk-1/i1', agent: 'clerk' })]);
    expect((await api<RunView>(`/api/runs/${encodeURIComponent(childRunId)}`)).status.state).toBe('waiting');
    expect((await keelJson<{ status: string }>(['status', childRunId])).status).toBe('waiting');

    const rows = async () =>
      (await api<{ runs: RunListing[] }>('/api/runs?agent=&limit=500')).runs.filter((run) => run.runId === nested.runId || run.runId === childRunId);
    await expect.poll(async () => (await rows()).map((run) => run.state), { timeout: 15_000 }).toEqual(['waiting', 'waiting']);
    const byId = Object.fromEntries((await rows()).map((run) => [run.runId, run]));
    expect(byId[nested.runId]).toMatchObject({ agent: 'travel', prompt: 'again to Paris' });
    expect(byId[nested.runId]!.holds).toBeUndefined();
    expect(byId[nested.runId]!.parentId).toBeUndefined();
    expect(byId[childRunId]).toMatchObject({ agent: 'clerk', holds: 1, parentId: nested.runId, label: 'clerk-1' });
    // keel list counts it once too.
    const listed = (await keelJson<{ runs: RunListing[] }>(['list', '--limit', '500'])).runs.filter(
      (run) => run.runId === nested.runId || run.runId === childRunId,
    );
    expect(listed.map((run) => run.holds ?? 0).reduce((sum, count) => sum + count, 0)).toBe(1);

    await nested.cancel();
  });

  it('come from the runs’ memos in one listing: with no worker to answer a query, they are shown in full', async () => {
    const nested = await worker.client.start('travel', 'to Paris, while nobody works');
    const [shown] = await inboxOf(nested.runId);
    await worker.stop();
    const listed = (await keelJson<{ holds: HoldView[] }>(['holds'])).holds.filter((hold) => hold.runId === nested.runId);
    expect(listed).toEqual([shown]);
    expect(shown).toMatchObject({ question: 'Approve book_train?', inputText: '{"to":"Paris","seats":2}', agent: 'clerk', label: 'clerk-1', turn: 1 });
    // The run stays open (its worker is gone) until the test's dev server stops.
  });
});
