/**
 * Runs a YAML file of loop cases (test/spec/*.yaml): each case is one test, one real
 * generate run on the shared dev server with scripted models. A case names its models by
 * key: `primary` (the agent's model) plus any in `models`; `@key` anywhere in `input.use`
 * stands for that model's registered name. See test/spec/loop-cases.yaml for the notation.
 */
import { temporal } from '@temporalio/proto';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runErrorOf } from '../../src/client/keel-client';
import { FinishReasonSchema } from '../../src/core/messages';
import { MiddlewareRefSchema } from '../../src/core/run';
import { StatusNameSchema } from '../../src/core/status';
import { defineAgent } from '../../src/define';
import { ScriptedReplySchema, scriptedModel, type ScriptedModel } from '../../src/models/scripted';
import { Registry } from '../../src/registry';
import { fixtureTools } from '../fixtures/tools';
import { answerHolds } from './answer-holds';
import { startTestWorker, type TestWorker } from './harness';
import { transcript } from './transcript';

const Replies = z.array(ScriptedReplySchema);

const CaseSchema = z
  .object({
    name: z.string(),
    agent: z
      .object({
        tools: z.array(z.string()).default([]),
        maxTurns: z.number().int().optional(),
        system: z.string().optional(),
        config: z.record(z.string(), z.unknown()).optional(),
      })
      .strict()
      .default({ tools: [] }),
    input: z
      .object({ maxTurns: z.number().int().optional(), use: z.array(MiddlewareRefSchema).optional(), interruptMode: z.enum(['wait', 'return']).optional() })
      .strict()
      .default({}),
    /** Decisions sent, in order, to the interrupts the run holds (each waits for the next pending one). */
    decisions: z
      .array(
        z
          .object({
            approved: z.boolean().optional(),
            reason: z.string().optional(),
            respond: z.unknown().optional(),
            restart: z.union([z.literal(true), z.record(z.string(), z.unknown())]).optional(),
            /** With restart: the input the call runs with instead. */
            input: z.unknown().optional(),
            /** The hold this decision answers (default: the oldest unanswered one). */
            interruptId: z.string().optional(),
          })
          .strict(),
      )
      .default([]),
    prompt: z.string().default('hi'),
    /** The agent's (primary) model's replies. */
    replies: Replies,
    /** Other models by key. */
    models: z.record(z.string(), Replies).default({}),
    expect: z
      .object({
        finishReason: FinishReasonSchema.optional(),
        text: z.string().optional(),
        turns: z.number().int().optional(),
        /** Compared whole: a field the schema does not know must still show up. */
        usage: z.record(z.string(), z.unknown()).optional(),
        /** The final message's metadata (matched as a subset). */
        finalMetadata: z.record(z.string(), z.unknown()).optional(),
        transcript: z.array(z.string()).optional(),
        error: z.object({ status: StatusNameSchema, includes: z.string() }).strict().optional(),
        /** Model calls of the primary model. */
        modelCalls: z.number().int().optional(),
        /** Model calls per model key. */
        calls: z.record(z.string(), z.number().int()).optional(),
        toolCalls: z.number().int().optional(),
        /** Durable timers the run started, in ms, in order (Retry's backoff). */
        timers: z.array(z.number()).optional(),
        /** Each timer within [min, max) ms. */
        timerRanges: z.array(z.tuple([z.number(), z.number()])).optional(),
        /** The interrupts the run held, in order (each matched as a subset). */
        interrupts: z.array(z.record(z.string(), z.unknown())).optional(),
        /** The interrupted parts of a run that ended `interrupted` (each matched as a subset). */
        interruptedParts: z.array(z.record(z.string(), z.unknown())).optional(),
        /** The config each call of a model carried, per model key. */
        requestConfigs: z.record(z.string(), z.array(z.record(z.string(), z.unknown()).nullable())).optional(),
      })
      .strict(),
  })
  .strict();

function substituteModels(value: unknown, names: Record<string, string>): unknown {
  if (typeof value === 'string' && value.startsWith('@')) {
    const name = names[value.slice(1)];
    if (!name) throw new Error(`unknown model key ${value}`);
    return name;
  }
  if (Array.isArray(value)) return value.map((item) => substituteModels(item, names));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substituteModels(item, names)]));
  return value;
}

async function timersOf(worker: TestWorker, runId: string): Promise<number[]> {
  const history = await worker.client.temporal.workflow.getHandle(runId).fetchHistory();
  return (history.events ?? [])
    .filter((event) => event.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_TIMER_STARTED)
    .map((event) => {
      const timeout = event.timerStartedEventAttributes!.startToFireTimeout!;
      return Number(timeout.seconds ?? 0) * 1000 + Math.round((timeout.nanos ?? 0) / 1e6);
    });
}

async function activitiesOf(worker: TestWorker, runId: string): Promise<string[]> {
  const history = await worker.client.temporal.workflow.getHandle(runId).fetchHistory();
  return (history.events ?? [])
    .flatMap((event) => (event.activityTaskScheduledEventAttributes ? [event.activityTaskScheduledEventAttributes.activityType?.name ?? '?'] : []))
    .filter((type) => type !== 'resolveAgent');
}

/** Declares one describe block with a test per case of `file` (relative to test/spec). */
export function runSpecFile(file: string): void {
  const path = join(__dirname, '..', 'spec', file);
  const cases = z.array(CaseSchema).parse(parse(readFileSync(path, 'utf8')));
  const prefix = basename(file, '.yaml');
  const toolsByName = new Map(fixtureTools.map((tool) => [tool.name, tool]));
  const registry = new Registry().add(...fixtureTools);
  let worker: TestWorker;

  beforeAll(async () => {
    worker = await startTestWorker(registry);
  });
  afterAll(async () => {
    await worker?.stop();
  });

  // The cases are independent runs (each its own agent and models): they run side by side.
  describe.concurrent(prefix, () => {
    for (const [index, spec] of cases.entries()) {
      it(spec.name, async () => {
        const id = `${prefix}-${index}`;
        const models: Record<string, ScriptedModel> = { primary: scriptedModel({ name: `scripted/${id}`, script: spec.replies }) };
        for (const [key, replies] of Object.entries(spec.models)) models[key] = scriptedModel({ name: `scripted/${id}/${key}`, script: replies });
        const names = Object.fromEntries(Object.entries(models).map(([key, model]) => [key, model.name]));
        const tools = spec.agent.tools.map((name) => {
          const tool = toolsByName.get(name);
          if (!tool) throw new Error(`case "${spec.name}" names unknown fixture tool "${name}"`);
          return tool;
        });
        registry.add(
          ...Object.values(models),
          defineAgent({ name: id, model: models.primary!.name, tools, maxTurns: spec.agent.maxTurns, system: spec.agent.system, config: spec.agent.config }),
        );
        const use = spec.input.use ? (substituteModels(spec.input.use, names) as typeof spec.input.use) : undefined;
        const handle = await worker.client.start(id, spec.prompt, { maxTurns: spec.input.maxTurns, use, interruptMode: spec.input.interruptMode });
        const settled = handle.result().then(
          (result) => ({ result, error: undefined }),
          (error: unknown) => ({ result: undefined, error: runErrorOf(error) }),
        );
        const seenHolds = await answerHolds(handle, settled, spec.decisions);
        const outcome = await settled;
        const { expect: expected } = spec;
        if (expected.error) {
          expect(outcome.error, `the run should fail, but it answered ${JSON.stringify(outcome.result?.text)}`).toBeDefined();
          expect(outcome.error!.status).toBe(expected.error.status);
          expect(outcome.error!.message).toContain(expected.error.includes);
          const status = await handle.status();
          expect(status.state).toBe('failed');
          expect(status.error?.status).toBe(expected.error.status);
          if (expected.finishReason) expect(status.finishReason).toBe(expected.finishReason);
          if (expected.text !== undefined) expect(status.text).toBe(expected.text);
        } else {
          if (outcome.error) throw outcome.error;
          const result = outcome.result;
          if (expected.finishReason) expect(result.finishReason).toBe(expected.finishReason);
          if (expected.text !== undefined) expect(result.text).toBe(expected.text);
          if (expected.turns !== undefined) expect(result.turns).toBe(expected.turns);
          if (expected.usage) expect(result.usage).toEqual(expected.usage);
          if (expected.finalMetadata) expect(result.message?.metadata).toMatchObject(expected.finalMetadata);
          if (expected.transcript) expect(transcript(result.messages)).toEqual(expected.transcript);
          expect((await handle.status()).state).toBe('completed');
        }
        if (expected.interrupts) {
          expect(seenHolds).toHaveLength(expected.interrupts.length);
          expected.interrupts.forEach((interrupt, position) => expect(seenHolds[position]).toMatchObject(interrupt));
        }
        if (expected.interruptedParts) {
          const parts = outcome.result?.interrupts ?? [];
          expect(parts).toHaveLength(expected.interruptedParts.length);
          expected.interruptedParts.forEach((part, position) => expect(parts[position]).toMatchObject(part));
        }
        const activities = await activitiesOf(worker, handle.runId);
        if (expected.modelCalls !== undefined) expect(models.primary!.requests).toHaveLength(expected.modelCalls);
        for (const [key, count] of Object.entries(expected.calls ?? {})) {
          expect(models[key], `no model "${key}" in the case`).toBeDefined();
          expect(models[key]!.requests, `calls of model "${key}"`).toHaveLength(count);
        }
        if (expected.toolCalls !== undefined) expect(activities.filter((type) => type === 'callTool')).toHaveLength(expected.toolCalls);
        const totalModelCalls = Object.values(models).reduce((sum, model) => sum + model.requests.length, 0);
        expect(
          activities.filter((type) => type === 'callModel'),
          'every model call is a scheduled activity',
        ).toHaveLength(totalModelCalls);
        if (expected.timers || expected.timerRanges) {
          const timers = await timersOf(worker, handle.runId);
          if (expected.timers) expect(timers).toEqual(expected.timers);
          if (expected.timerRanges) {
            expect(timers).toHaveLength(expected.timerRanges.length);
            expected.timerRanges.forEach(([min, max], position) => {
              expect(timers[position]).toBeGreaterThanOrEqual(min);
              expect(timers[position]).toBeLessThan(max);
            });
          }
        }
        for (const [key, configs] of Object.entries(expected.requestConfigs ?? {})) {
          expect(models[key]!.requests.map((request) => request.request.config ?? null)).toEqual(configs);
        }
      });
    }
  });
}
