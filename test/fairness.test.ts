/**
 * Fair shares on the engine (docs/tenants.md, "Fair shares"): a run's tenant is its Temporal
 * fairness key (with the tenant's weight from `fairness.weights`), handed down to every model
 * and tool call and every child workflow; its kind of work sets its priority key (a session's
 * turns first, background tasks and forks after). Read back from Temporal itself (describe) and
 * from inside the activities (their own Priority), on a real dev server started with fairness
 * on. Per-tenant limits on a rate-limited model's queue: written by `keel namespace setup`,
 * changed behind its back with the temporal CLI, and caught by `keel deploy check`.
 */
import { Context } from '@temporalio/activity';
import type { Priority } from '@temporalio/common';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../src/define';
import { agents } from '../src/features/agents/agents';
import { modelTaskQueue } from '../src/core/rate-limit';
import { scriptedModel, textReply, toolCallReply, type ScriptedReply } from '../src/models/scripted';
import type { ModelRequest } from '../src/core/messages';
import { Registry } from '../src/registry';
import { sharedTestWorker } from './support/harness';
import { runKeel, writeTestConfig } from './support/processes';
import { temporalCli } from './support/temporal-cli';

/** The Priority each run's latest model call ran with, as its activity was handed it. */
const seen = new Map<string, Priority | undefined>();
/** Records the call's Priority, then answers. */
const probed =
  (reply: (request: ModelRequest) => ScriptedReply) =>
  (request: ModelRequest): ScriptedReply => {
    const info = Context.current().info;
    seen.set(info.workflowExecution?.workflowId ?? '', info.priority);
    return reply(request);
  };
/**
 * A scripted model with a rate limit: its calls go through a queue of their own, where the server
 * hands each its run's Priority (a call run eagerly, on the worker that scheduled it, skips the
 * queue and the fairness that comes with it).
 */
const limited = (model: ReturnType<typeof scriptedModel>) => Object.assign(model, { rateLimit: { concurrency: 4 } });

const registry = new Registry();
const helper = limited(scriptedModel({ name: 'scripted/fair-helper', script: probed(() => textReply('helped')) }));
const lead = limited(
  scriptedModel({
    name: 'scripted/fair-lead',
    script: probed((request) => {
      const turn = request.messages.filter((message) => message.role === 'model').length;
      if (turn === 0) return toolCallReply({ name: 'delegate_to_fair_helper', input: { task: 'help', background: true } });
      if (turn > 1) return textReply('done');
      const launched = request.messages
        .flatMap((message) => message.content)
        .find((part) => 'toolResponse' in part && part.toolResponse.name === 'delegate_to_fair_helper');
      const taskId = (launched as { toolResponse: { output: { taskId: string } } }).toolResponse.output.taskId;
      return toolCallReply({ name: 'wait_for_background_tasks', input: { taskIds: [taskId] } });
    }),
  }),
);
const chat = limited(scriptedModel({ name: 'scripted/fair-chat', script: probed(() => textReply('hi')) }));
registry.add(
  helper,
  lead,
  chat,
  defineAgent({ name: 'fair_helper', description: 'Helps.', model: helper.name }),
  defineAgent({ name: 'fair-lead', model: lead.name, use: [agents({ agents: ['fair_helper'], async: true })] }),
  defineAgent({ name: 'fair-chat', model: chat.name, session: 'server' }),
  defineAgent({ name: 'fair-plain', model: chat.name }),
);
const worker = sharedTestWorker(registry, { fairness: { weights: { acme: 3 } } });

/** A Priority without the fields Temporal decodes as 0 or empty for "not set". */
const given = (priority: Priority | undefined) =>
  Object.fromEntries(Object.entries(priority ?? {}).filter(([, value]) => value !== undefined && value !== 0 && value !== ''));
const priorityOfRun = async (runId: string) => given((await worker().client.temporal.workflow.getHandle(runId).describe()).priority);

describe.concurrent('fair shares', () => {
  it("a tenant's run carries its fairness key and weight to every call and child; its background task goes after it", async () => {
    const handle = await worker().client.start('fair-lead', 'go', { tenant: 'acme', owner: 'alice' });
    expect((await handle.result()).text).toBe('done');
    const taskRunId = `${handle.runId}/fair_helper-1`;
    // What Temporal records: the run at the ordinary runs' priority, with acme's key and weight.
    expect(await priorityOfRun(handle.runId)).toEqual({ priorityKey: 3, fairnessKey: 'acme', fairnessWeight: 3 });
    // The background task: later, and still acme's share (inherited, never re-said).
    expect(await priorityOfRun(taskRunId)).toEqual({ priorityKey: 4, fairnessKey: 'acme', fairnessWeight: 3 });
    // What the model calls ran with: each its own run's.
    expect(given(seen.get(handle.runId))).toEqual({ priorityKey: 3, fairnessKey: 'acme', fairnessWeight: 3 });
    expect(given(seen.get(taskRunId))).toEqual({ priorityKey: 4, fairnessKey: 'acme', fairnessWeight: 3 });
  });

  it("a session's turns go first, with their tenant's key; a run of no one has no key; a fork goes after, with its source's tenant", async () => {
    const sessionId = `fair-${randomUUID()}`;
    const session = worker().client.session('fair-chat', sessionId, { tenant: 'globex', owner: 'bob' });
    const turn = await session.send('hello');
    expect(turn.text).toBe('hi');
    expect(await priorityOfRun(session.workflowId)).toEqual({ priorityKey: 1, fairnessKey: 'globex' });
    expect(await priorityOfRun(turn.runId)).toEqual({ priorityKey: 1, fairnessKey: 'globex' });
    expect(given(seen.get(turn.runId))).toEqual({ priorityKey: 1, fairnessKey: 'globex' });

    const unowned = await worker().client.start('fair-plain', 'alone');
    await unowned.result();
    expect(await priorityOfRun(unowned.runId)).toEqual({ priorityKey: 3 });

    const source = await worker().client.start('fair-plain', 'to fork', { tenant: 'acme' });
    await source.result();
    const fork = await source.fork({ at: 1, message: 'and again' });
    await fork.handle.result();
    expect(await priorityOfRun(fork.runId)).toEqual({ priorityKey: 4, fairnessKey: 'acme', fairnessWeight: 3 });
  });
});

describe('per-tenant limits on a rate-limited model', () => {
  it('keel namespace setup writes each limit, again says it is set; keel deploy check catches one changed behind its back', async () => {
    const taskQueue = `fair-limits-${randomUUID()}`;
    const models = [
      { name: 'scripted/fair-limited', script: [{ text: 'x' }], rateLimit: { concurrency: 2, perTenant: 2 } },
      { name: 'scripted/fair-capped', script: [{ text: 'x' }], rateLimit: { concurrency: 1 } },
    ];
    const { configPath } = writeTestConfig('fair-limits', { taskQueue, server: { enabled: false }, models });
    const limited = modelTaskQueue(taskQueue, 'scripted/fair-limited');
    const capped = modelTaskQueue(taskQueue, 'scripted/fair-capped');

    const first = await runKeel(['namespace', 'setup', '--json', '--config', configPath]);
    expect(first.code, first.stderr).toBe(0);
    expect((JSON.parse(first.stdout) as { fairnessLimits: unknown }).fairnessLimits).toEqual([
      { model: 'scripted/fair-limited', taskQueue: limited, perTenant: 2, was: null },
      { model: 'scripted/fair-capped', taskQueue: capped, perTenant: null, was: null },
    ]);
    // The server's own CLI sees it.
    const read = await temporalCli(['task-queue', 'config', 'get', '--task-queue', limited, '--task-queue-type', 'activity', '--output', 'json']);
    expect(read.code, read.stderr).toBe(0);
    expect(read.stdout).toMatch(/"requestsPerSecond":\s*2\b/);

    const again = await runKeel(['namespace', 'setup', '--config', configPath]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`keel namespace setup: model scripted/fair-limited (task queue ${limited}): per-tenant limit 2/s per tenant, already set`);
    expect(again.stdout).toContain(`keel namespace setup: model scripted/fair-capped (task queue ${capped}): per-tenant limit none, already set`);
    const agrees = await runKeel(['deploy', 'check', '--json', '--config', configPath]);
    expect(agrees.code, agrees.stderr).toBe(0);
    expect(JSON.parse(agrees.stdout)).not.toHaveProperty('limitsOff');

    // An operator raises acme's and everyone's share by hand: the check says so and fails; setup puts it back.
    const changed = await temporalCli([
      'task-queue',
      'config',
      'set',
      '--task-queue',
      limited,
      '--task-queue-type',
      'activity',
      '--fairness-key-rps-limit-default',
      '50',
      '--fairness-key-rps-limit-reason',
      'by hand',
    ]);
    expect(changed.code, changed.stderr).toBe(0);
    const drift = await runKeel(['deploy', 'check', '--config', configPath]);
    expect(drift.code).toBe(1);
    expect(drift.stdout).toContain(
      `✗ model scripted/fair-limited (task queue ${limited}): the server's per-tenant limit is 50/s per tenant, the config's 2/s per tenant; run keel namespace setup to write it`,
    );
    const restored = await runKeel(['namespace', 'setup', '--config', configPath]);
    expect(restored.stdout).toContain(`per-tenant limit 2/s per tenant, set (was 50/s per tenant)`);
    expect((await runKeel(['deploy', 'check', '--config', configPath])).code).toBe(0);
  });

  it('refuses a per-tenant limit that is not a positive number, naming the field, before connecting', async () => {
    const { configPath } = writeTestConfig('fair-bad', { models: [{ name: 'scripted/fair-bad', script: [{ text: 'x' }], rateLimit: { perTenant: 0 } }] });
    const refused = await runKeel(['namespace', 'setup', '--config', configPath]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/models\.0\.rateLimit\.perTenant: must be more than 0|models\[0\]\.rateLimit\.perTenant: must be more than 0/);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
  });
});
