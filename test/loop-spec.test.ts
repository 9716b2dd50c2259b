/**
 * The tool loop as data: every case in spec/loop-cases.yaml is one test, run as a real
 * generate workflow on the shared dev server with a scripted model.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runErrorOf } from '../src/client/keel-client';
import { UsageSchema, FinishReasonSchema } from '../src/core/messages';
import { MiddlewareRefSchema } from '../src/core/run';
import { StatusNameSchema } from '../src/core/status';
import { defineAgent } from '../src/define';
import { ScriptedReplySchema, scriptedModel } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { fixtureTools } from './fixtures/tools';
import { scheduledActivities } from './support/history';
import { startTestWorker, type TestWorker } from './support/harness';
import { transcript } from './support/transcript';

const CaseSchema = z
  .object({
    name: z.string(),
    agent: z.object({ tools: z.array(z.string()).default([]), maxTurns: z.number().int().optional(), system: z.string().optional() }).strict().default({ tools: [] }),
    input: z.object({ maxTurns: z.number().int().optional(), use: z.array(MiddlewareRefSchema).optional() }).strict().default({}),
    prompt: z.string().default('hi'),
    replies: z.array(ScriptedReplySchema),
    expect: z
      .object({
        finishReason: FinishReasonSchema.optional(),
        text: z.string().optional(),
        turns: z.number().int().optional(),
        usage: UsageSchema.optional(),
        transcript: z.array(z.string()).optional(),
        error: z.object({ status: StatusNameSchema, includes: z.string() }).strict().optional(),
        modelCalls: z.number().int().optional(),
        toolCalls: z.number().int().optional(),
      })
      .strict(),
  })
  .strict();

const cases = z.array(CaseSchema).parse(parse(readFileSync(join(__dirname, 'spec', 'loop-cases.yaml'), 'utf8')));
const toolsByName = new Map(fixtureTools.map((tool) => [tool.name, tool]));
const registry = new Registry().add(...fixtureTools);
let worker: TestWorker;

beforeAll(async () => {
  worker = await startTestWorker(registry);
});
afterAll(async () => {
  await worker?.stop();
});

describe('generate loop spec', () => {
  for (const [index, spec] of cases.entries()) {
    it(spec.name, async () => {
      const model = scriptedModel({ name: `scripted/loop-${index}`, script: spec.replies });
      const tools = spec.agent.tools.map((name) => {
        const tool = toolsByName.get(name);
        if (!tool) throw new Error(`case "${spec.name}" names unknown fixture tool "${name}"`);
        return tool;
      });
      registry.add(model, defineAgent({ name: `loop-${index}`, model: model.name, tools, maxTurns: spec.agent.maxTurns, system: spec.agent.system }));
      const handle = await worker.client.start(`loop-${index}`, spec.prompt, { maxTurns: spec.input.maxTurns, use: spec.input.use });
      const outcome = await handle.result().then(
        (result) => ({ result, error: undefined }),
        (error: unknown) => ({ result: undefined, error: runErrorOf(error) }),
      );
      const { expect: expected } = spec;
      if (expected.error) {
        expect(outcome.error, 'the run should fail').toBeDefined();
        expect(outcome.error!.status).toBe(expected.error.status);
        expect(outcome.error!.message).toContain(expected.error.includes);
        const status = await handle.status();
        expect(status.state).toBe('failed');
        expect(status.error?.status).toBe(expected.error.status);
      } else {
        if (outcome.error) throw outcome.error;
        const result = outcome.result!;
        if (expected.finishReason) expect(result.finishReason).toBe(expected.finishReason);
        if (expected.text !== undefined) expect(result.text).toBe(expected.text);
        if (expected.turns !== undefined) expect(result.turns).toBe(expected.turns);
        if (expected.usage) expect(result.usage).toEqual(expected.usage);
        if (expected.transcript) expect(transcript(result.messages)).toEqual(expected.transcript);
        expect((await handle.status()).state).toBe('completed');
      }
      const activities = await scheduledActivities(worker.client.temporal, handle.runId);
      if (expected.modelCalls !== undefined) expect(model.requests).toHaveLength(expected.modelCalls);
      if (expected.toolCalls !== undefined) expect(activities.filter((type) => type === 'callTool')).toHaveLength(expected.toolCalls);
      // Every model call the scripted model answered was a scheduled activity.
      expect(activities.filter((type) => type === 'callModel')).toHaveLength(model.requests.length);
    });
  }
});
