/**
 * Runs of one workflow thread share keel's modules (the SDK's `preloadModules`, see
 * src/worker/bundle.ts) and nothing else: two runs interleaved on one worker (one workflow
 * thread, the SDK's default with a reused V8 context; both runs cached) keep their own
 * middleware state (Budget's limit and what it spent), their own log attributes (a run's
 * warnings name its agent, also after the other run registered its own) and their own
 * conversations (no model request of one run carries the other's messages).
 */
import { describe, expect, it } from 'vitest';
import { runErrorOf, type RunHandle } from '../src/client/keel-client';
import type { ModelRequest } from '../src/core/messages';
import { defineAgent } from '../src/define';
import { BUDGET_METADATA_KEY, budget } from '../src/features/budget/budget';
import { fallback } from '../src/features/fallback/fallback';
import { toolApproval } from '../src/features/tool-approval/tool-approval';
import { errorReply, scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { dangerous, echo } from './fixtures/tools';
import { capturedLogs, sharedTestWorker } from './support/harness';

const toolAnswers = (request: ModelRequest) => request.messages.filter((message) => message.role === 'tool').length;

/**
 * An agent whose primary model asks for `dangerous` (held by ToolApproval) and then fails, so
 * each later call falls back (Fallback logs a warning) to a model that asks for `echo`, then answers.
 * Every reply spends 20 input tokens of the Budget's `limit`.
 */
function isolatedAgent(name: string, limit: number) {
  const usage = { inputTokens: 20 };
  const primary = scriptedModel({
    name: `scripted/${name}-primary`,
    script: (request) => (toolAnswers(request) === 0 ? toolCallReply({ name: 'dangerous', input: { v: name } }, { usage }) : errorReply('UNAVAILABLE', 'down')),
  });
  const backup = scriptedModel({
    name: `scripted/${name}-backup`,
    script: (request) => (toolAnswers(request) === 1 ? toolCallReply({ name: 'echo', input: { v: name } }, { usage }) : textReply(`${name} done`, { usage })),
  });
  const agent = defineAgent({
    name,
    model: primary.name,
    tools: [dangerous, echo],
    use: [budget({ limit: { inputTokens: limit } }), toolApproval({ allowedTools: ['echo'] }), fallback({ models: [backup.name] })],
  });
  return { name, models: [primary, backup], registry: [primary, backup, agent] as const };
}

const tight = isolatedAgent('isolated-tight', 30);
const roomy = isolatedAgent('isolated-roomy', 1000);
const registry = new Registry().add(dangerous, echo, ...tight.registry, ...roomy.registry);
const worker = sharedTestWorker(registry);

async function heldCall(handle: RunHandle): Promise<string> {
  let id: string | undefined;
  await expect.poll(async () => (id = (await handle.pendingHolds())[0]?.id), { timeout: 30_000, interval: 100 }).toBeDefined();
  return id!;
}

describe('runs sharing a workflow thread', () => {
  it('keep their own middleware state, log attributes and conversations when interleaved', { timeout: 120_000 }, async () => {
    // tight: call 1 spends 20 of 30, its dangerous call is held
    // roomy: call 1 spends 20 of 1000, its dangerous call is held (roomy is now the run registered last)
    // tight approved: call 2 fails and falls back (a warning), spends 20 → 40; echo runs; the check before call 3 stops it
    // roomy approved: call 2 falls back, 40; echo; call 3 falls back and answers, 60 of 1000
    const { client } = worker();
    const tightRun = await client.start(tight.name, 'alpha');
    const tightHold = await heldCall(tightRun);
    const roomyRun = await client.start(roomy.name, 'beta');
    const roomyHold = await heldCall(roomyRun);

    await tightRun.approve(tightHold);
    expect(await tightRun.result().then(() => undefined, runErrorOf)).toMatchObject({ status: 'ABORTED', message: 'budget: used 40 of 30 inputTokens' });
    await roomyRun.approve(roomyHold);
    const roomyResult = await roomyRun.result();
    expect(roomyResult.text).toBe('isolated-roomy done');
    expect(roomyResult.message!.metadata?.[BUDGET_METADATA_KEY]).toEqual({ spent: { inputTokens: 60 } });

    // Each run's warnings name its own agent, though the other run registered its agent in between.
    const warnings = (handle: RunHandle) =>
      capturedLogs
        .filter((entry) => entry.message === 'model call failed, falling back' && entry.meta?.workflowId === handle.runId)
        .map((entry) => entry.meta?.agent);
    expect(warnings(tightRun)).toEqual([tight.name]);
    expect(warnings(roomyRun)).toEqual([roomy.name, roomy.name]);

    // Each model saw only its own run's conversation.
    const prompts = (models: typeof tight.models) => new Set(models.flatMap((model) => model.requests.map((seen) => JSON.stringify(seen.request.messages[0]))));
    expect([...prompts(tight.models)]).toEqual([expect.stringContaining('alpha')]);
    expect([...prompts(roomy.models)]).toEqual([expect.stringContaining('beta')]);
  });
});
