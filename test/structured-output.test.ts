/**
 * Structured output (docs/structured-output.md), as real runs with the scripted model: the
 * request carries the schema, an answer that does not match gets the model asked again with
 * the validation error, and the result (and status) carry the parsed value.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../src/define';
import { agents } from '../src/features/agents/agents';
import { KeelError } from '../src/core/errors';
import { OUTPUT_RETRY_METADATA } from '../src/core/output';
import type { ModelRequest } from '../src/core/messages';
import { objectReply, scriptedModel, textReply, toolCallReply, type Script } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { parseConfig } from '../src/config/load';
import { loadRegistry } from '../src/worker/load-registry';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sharedTestWorker } from './support/harness';
import { ROOT, runKeel, writeTestConfig } from './support/processes';

const registry = new Registry();
const worker = sharedTestWorker(registry);

const Weather = z.object({ city: z.string(), celsius: z.number() });

let count = 0;
/** Registers an agent answering `Weather` with a fresh scripted model. */
function weatherAgent(script: Script, retries?: number) {
  const name = `weather-${++count}`;
  const model = scriptedModel({ name: `scripted/${name}`, script });
  const agent = defineAgent({ name, model: model.name, output: retries === undefined ? Weather : { schema: Weather, retries } });
  registry.add(model, agent);
  return { agent, model };
}

describe.concurrent('structured output', () => {
  it('asks the model for the schema and gives the parsed answer as result.output, typed', async () => {
    const { agent, model } = weatherAgent([objectReply({ city: 'Oslo', celsius: 4 })]);
    const handle = await worker().client.start(agent, 'weather in Oslo?');
    const result = await handle.result();
    expectTypeOf(result.output).toEqualTypeOf<{ city: string; celsius: number } | undefined>();
    expect(result.output).toEqual({ city: 'Oslo', celsius: 4 });
    expect(result.finishReason).toBe('stop');
    const asked = model.requests[0]!.request.output;
    expect(asked).toMatchObject({ format: 'json', name: 'output', schema: { type: 'object', required: ['city', 'celsius'] } });
    const status = await handle.status();
    expect(status.output).toEqual({ city: 'Oslo', celsius: 4 });
  });

  it('gives the model the validation error and takes its next, valid answer', async () => {
    // Turn 1: celsius is a string (invalid); turn 2: valid.
    const { agent, model } = weatherAgent([objectReply({ city: 'Oslo', celsius: 'cold' }), objectReply({ city: 'Oslo', celsius: -3 })]);
    const result = await worker().client.run(agent, 'weather?');
    expect(result.output).toEqual({ city: 'Oslo', celsius: -3 });
    expect(model.requests).toHaveLength(2);
    const retry = model.requests[1]!.request.messages.at(-1)!;
    expect(retry.role).toBe('user');
    expect(retry.metadata?.[OUTPUT_RETRY_METADATA]).toBe(1);
    expect(JSON.stringify(retry.content)).toContain('output.celsius');
    // The invalid answer and the retry stay in the run's history.
    expect(result.messages.filter((message) => message.role === 'model')).toHaveLength(2);
  });

  it('fails INVALID_ARGUMENT naming the path after retries + 1 invalid answers', async () => {
    const { agent, model } = weatherAgent(() => objectReply({ city: 7, celsius: 1 }));
    const error = await worker()
      .client.run(agent, 'weather?')
      .then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
    expect(KeelError.isInstance(error)).toBe(true);
    expect((error as KeelError).status).toBe('INVALID_ARGUMENT');
    expect((error as KeelError).message).toContain('output.city: Invalid input: expected string, received number');
    expect((error as KeelError).message).toContain('after 3 attempts');
    expect(model.requests).toHaveLength(3);
  });

  it('takes output.retries and a non-JSON answer as invalid', async () => {
    const { agent, model } = weatherAgent(() => textReply('It is cold in Oslo.'), 0);
    const error = (await worker()
      .client.run(agent, 'weather?')
      .catch((thrown: unknown) => thrown)) as KeelError;
    expect(error.status).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain('output: the answer is not JSON');
    expect(model.requests).toHaveLength(1);
  });

  it('takes a per-run JSON Schema over the agent (started by name: output is unknown)', async () => {
    const name = `plain-${++count}`;
    const model = scriptedModel({ name: `scripted/${name}`, script: [objectReply({ answer: 42 })] });
    registry.add(model, defineAgent({ name, model: model.name }));
    const schema = { type: 'object', properties: { answer: { type: 'integer' } }, required: ['answer'] };
    const result = await worker().client.run(name, 'the answer?', { output: schema });
    expectTypeOf(result.output).toEqualTypeOf<unknown>();
    expect(result.output).toEqual({ answer: 42 });
    expect(model.requests[0]!.request.output).toEqual({ format: 'json', name: 'output', schema });
  });

  it('refuses a per-run output option that is not a JSON Schema before the run starts', async () => {
    await expect(worker().client.start('anything', 'go', { output: { schema: { type: 'object' }, retries: -1 } })).rejects.toThrow(/output\.retries/);
  });

  it('hands a sub-agent structured answer to the parent tool response', async () => {
    const { agent: child } = weatherAgent([objectReply({ city: 'Bergen', celsius: 9 })]);
    const name = `parent-${++count}`;
    const model = scriptedModel({
      name: `scripted/${name}`,
      script: [toolCallReply({ name: `delegate_to_${child.name}`, input: { task: 'weather in Bergen' } }), textReply('done')],
    });
    registry.add(model, defineAgent({ name, model: model.name, use: [agents({ agents: [child.name] })] }));
    const result = await worker().client.run(name, 'go');
    const toolMessage = result.messages.find((message) => message.role === 'tool')!;
    const part = toolMessage.content[0] as { toolResponse: { output: { output?: unknown; response: string } } };
    expect(part.toolResponse.output.output).toEqual({ city: 'Bergen', celsius: 9 });
  });
});

// The steer has to land during the first call's 1.5 s: that test runs on its own, before the other two.
describe('structured output with steering and background tasks', () => {
  it('answers a steer that came during the final call with one more call, and validates that answer', async () => {
    // Call 1: a slow, valid answer (steered meanwhile: not taken as the answer); call 2: the answer
    // to the steer, invalid; call 3: after the validation error, valid.
    const { agent, model } = weatherAgent([
      objectReply({ city: 'Oslo', celsius: 4 }, { delayMs: 1500 }),
      objectReply({ city: 'Bergen', celsius: 'mild' }),
      objectReply({ city: 'Bergen', celsius: 9 }),
    ]);
    const handle = await worker().client.start(agent, 'weather in Oslo?');
    await expect.poll(() => model.requests.filter((request) => request.runId === handle.runId).length, { timeout: 20_000, interval: 50 }).toBe(1);
    await handle.steer('Bergen instead, please');
    const result = await handle.result();
    expect(result.output).toEqual({ city: 'Bergen', celsius: 9 });
    const requests = model.requests.filter((request) => request.runId === handle.runId).map((request) => request.request);
    expect(requests).toHaveLength(3);
    expect(requests[1]!.messages.at(-1)).toMatchObject({ role: 'user', content: [{ text: 'Bergen instead, please' }] });
    expect(requests[1]!.output).toMatchObject({ format: 'json', name: 'output' });
    expect(requests[2]!.messages.at(-1)!.metadata?.[OUTPUT_RETRY_METADATA]).toBe(1);
    expect(JSON.stringify(requests[2]!.messages.at(-1)!.content)).toContain('output.celsius');
    // Taken by the second model call (turn 2), after the first answer was left unchecked.
    expect((await handle.status()).steering).toEqual([expect.objectContaining({ state: 'applied', turn: 2 })]);
  });

  it.concurrent('hands a server-managed (session) sub-agent structured answer to the parent tool response', async () => {
    const childName = `weather-session-${++count}`;
    const childModel = scriptedModel({ name: `scripted/${childName}`, script: [objectReply({ city: 'Bodø', celsius: 2 })] });
    registry.add(childModel, defineAgent({ name: childName, model: childModel.name, session: 'server', output: Weather }));
    const name = `session-parent-${++count}`;
    const model = scriptedModel({
      name: `scripted/${name}`,
      script: [toolCallReply({ name: `delegate_to_${childName}`, input: { task: 'weather in Bodø' } }), textReply('done')],
    });
    registry.add(model, defineAgent({ name, model: model.name, use: [agents({ agents: [childName] })] }));
    const result = await worker().client.run(name, 'go');
    const part = result.messages.find((message) => message.role === 'tool')!.content[0] as {
      toolResponse: { output: { output?: unknown; status?: string; taskId?: string } };
    };
    expect(part.toolResponse.output).toMatchObject({ status: 'completed', output: { city: 'Bodø', celsius: 2 } });
  });

  it.concurrent('gives a background task of a sub-agent with an output schema its object when collected', async () => {
    const { agent: child } = weatherAgent([objectReply({ city: 'Tromsø', celsius: -8 })]);
    const name = `bg-parent-${++count}`;
    const taskIdOf = (request: ModelRequest) =>
      (
        request.messages
          .flatMap((message) => message.content)
          .find((part) => 'toolResponse' in part && part.toolResponse.name === `delegate_to_${child.name}`) as {
          toolResponse: { output: { taskId: string } };
        }
      ).toolResponse.output.taskId;
    const model = scriptedModel({
      name: `scripted/${name}`,
      script: [
        toolCallReply({ name: `delegate_to_${child.name}`, input: { task: 'weather in Tromsø', background: true } }),
        (request: ModelRequest) => toolCallReply({ name: 'wait_for_background_tasks', input: { taskIds: [taskIdOf(request)], timeoutSeconds: 60 } }),
        textReply('done'),
      ],
    });
    registry.add(model, defineAgent({ name, model: model.name, use: [agents({ agents: [child.name], async: true })] }));
    const result = await worker().client.run(name, 'go');
    const waited = result.messages
      .flatMap((message) => message.content)
      .find((part) => 'toolResponse' in part && part.toolResponse.name === 'wait_for_background_tasks') as {
      toolResponse: { output: { tasks: Array<{ status: string; output?: unknown }> } };
    };
    expect(waited.toolResponse.output.tasks).toEqual([expect.objectContaining({ status: 'completed', output: { city: 'Tromsø', celsius: -8 } })]);
  });
});

describe.concurrent('structured output in temporal.yaml', () => {
  it('takes a JSON Schema alone or { schema, retries } and refuses one zod cannot read, naming the agent', async () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
    const config = parseConfig(
      {
        models: [{ name: 'scripted/yaml-output', provider: 'scripted', script: [{ object: { n: 1 } }] }],
        agents: [
          { name: 'yaml-bare', model: 'scripted/yaml-output', output: schema },
          { name: 'yaml-wrapped', model: 'scripted/yaml-output', output: { schema, retries: 0 } },
        ],
      },
      { baseDir: ROOT, env: {} },
    );
    const yamlRegistry = await loadRegistry(config);
    expect(yamlRegistry.agents.get('yaml-bare')!.output).toEqual({ schema, retries: 2, name: 'output' });
    expect(yamlRegistry.agents.get('yaml-wrapped')!.output).toEqual({ schema, retries: 0, name: 'output' });
    await yamlRegistry.close();
    expect(() => parseConfig({ agents: [{ name: 'typo', model: 'm', output: { schema, retry: 3 } }] }, { baseDir: ROOT, env: {} })).toThrow(
      /agents\[0\]\.output/,
    );
    const bad = parseConfig(
      {
        models: [{ name: 'scripted/yaml-bad', provider: 'scripted', script: [] }],
        agents: [{ name: 'yaml-bad', model: 'scripted/yaml-bad', output: { type: 'no-such-type' } }],
      },
      { baseDir: ROOT, env: {} },
    );
    await expect(loadRegistry(bad)).rejects.toThrow(/agents\[0\].*output schema/);
  });
});

describe.concurrent('keel run with structured output', () => {
  it('prints the answer as JSON, with --json in "output", and keel status shows it; --output-schema gives one for the run', async () => {
    const { agent } = weatherAgent(() => objectReply({ city: 'Oslo', celsius: 4 }));
    const { configPath, dir } = writeTestConfig('output-cli', { taskQueue: worker().taskQueue, server: { enabled: false } });
    const plain = await runKeel(['run', agent.name, 'weather?', '--config', configPath]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(JSON.parse(plain.stdout)).toEqual({ city: 'Oslo', celsius: 4 });
    const json = await runKeel(['run', agent.name, 'weather?', '--json', '--config', configPath]);
    expect(json.code, json.stderr).toBe(0);
    const summary = JSON.parse(json.stdout) as { runId: string; output: unknown };
    expect(summary.output).toEqual({ city: 'Oslo', celsius: 4 });
    const status = await runKeel(['status', summary.runId, '--json', '--config', configPath]);
    expect((JSON.parse(status.stdout) as { output: unknown }).output).toEqual({ city: 'Oslo', celsius: 4 });

    const name = `cli-plain-${++count}`;
    const model = scriptedModel({ name: `scripted/${name}`, script: () => objectReply({ ok: true }) });
    registry.add(model, defineAgent({ name, model: model.name }));
    const schemaFile = join(dir, 'answer.json');
    writeFileSync(schemaFile, JSON.stringify({ type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }));
    const overridden = await runKeel(['run', name, 'ok?', '--output-schema', schemaFile, '--json', '--config', configPath]);
    expect(overridden.code, overridden.stderr).toBe(0);
    expect((JSON.parse(overridden.stdout) as { output: unknown }).output).toEqual({ ok: true });
    const missing = await runKeel(['run', name, 'ok?', '--output-schema', join(dir, 'absent.json'), '--config', configPath]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--output-schema: cannot read');
  });
});

describe.concurrent('examples/structured-output.ts', () => {
  it('runs the docs example: the wrong first answer is retried and the output is typed', async () => {
    const example = await import('../examples/structured-output');
    registry.add(example.forecastModel, example.forecaster);
    const output = await example.forecast(worker().client, 'Oslo');
    expectTypeOf(output).toEqualTypeOf<{ city: string; celsius: number; summary: string } | undefined>();
    expect(output).toEqual({ city: 'Oslo', celsius: 4, summary: 'Grey, light rain' });
  });
});
