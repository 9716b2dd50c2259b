/**
 * A tool's result is checked against its `output` schema after the tool runs (docs/agents-and-tools.md,
 * "Defining agents and tools"): a result that fails it fails the run with INTERNAL naming
 * the tool and the field, without running the tool again; under SoftToolErrors the model
 * gets `{ "error": ... }` for that call instead and the run goes on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runErrorOf } from '../src/client/keel-client';
import { defineAgent, defineTool } from '../src/define';
import { softToolErrors } from '../src/features/soft-tool-errors/soft-tool-errors';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { startTestWorker, type TestWorker } from './support/harness';
import { SOFT_TOOL_ERRORS_HINT } from '../src/workflows/run-status';

/** What a flaky upstream answers per city: Porto's high arrives as a string. */
const UPSTREAM: Record<string, string> = {
  Lisbon: '{"city":"Lisbon","sky":"sunny","highC":24,"source":"upstream-v2"}',
  Porto: '{"city":"Porto","sky":"cloudy","highC":"19"}',
};
const calls: string[] = [];
const lookupWeather = defineTool({
  name: 'lookup_weather',
  description: "Looks up tomorrow's forecast for a city.",
  input: z.object({ city: z.string() }),
  output: z.object({ city: z.string(), sky: z.string(), highC: z.number() }),
  run: ({ city }) => {
    calls.push(city);
    return JSON.parse(UPSTREAM[city]!);
  },
});

const SCHEMA_FAILURE = 'tool "lookup_weather" returned output that fails its schema: highC: Invalid input: expected number, received string';

const registry = new Registry().add(lookupWeather);
let worker: TestWorker;
beforeAll(async () => {
  worker = await startTestWorker(registry);
});
afterAll(async () => {
  await worker?.stop();
});

describe('tool output schema', () => {
  it('fails the run with INTERNAL naming the tool and the field, and does not run the tool again', async () => {
    // turn 1: lookup_weather(Porto), whose result has highC as a string: the run fails
    const model = scriptedModel({
      name: 'scripted/output-hard',
      script: [toolCallReply({ name: 'lookup_weather', input: { city: 'Porto' } }), textReply('unreachable')],
    });
    registry.add(model, defineAgent({ name: 'output-hard', model: model.name, tools: [lookupWeather] }));
    calls.length = 0;
    const handle = await worker.client.start('output-hard', 'Porto tomorrow?');
    const error = await handle.result().then(() => undefined, runErrorOf);
    expect(error?.toJSON()).toEqual({ status: 'INTERNAL', message: `${SCHEMA_FAILURE}; ${SOFT_TOOL_ERRORS_HINT}` });
    expect(calls, 'a schema failure is an outcome, not an infrastructure failure Temporal retries').toEqual(['Porto']);
    expect(model.requests).toHaveLength(1);
    expect(await handle.status()).toMatchObject({ state: 'failed', turn: 1 });
  });

  it('answers the call with { error } under softToolErrors, passes a valid result as parsed, and the run goes on', async () => {
    // turn 1: lookup_weather(Lisbon) (valid, with a field outside the schema) and lookup_weather(Porto) (invalid)
    // turn 2: the model, having seen Lisbon's forecast and Porto's error, answers
    const model = scriptedModel({
      name: 'scripted/output-soft',
      script: [
        toolCallReply([
          { name: 'lookup_weather', input: { city: 'Lisbon' } },
          { name: 'lookup_weather', input: { city: 'Porto' } },
        ]),
        textReply('Lisbon: sunny, 24 °C. No forecast for Porto.'),
      ],
    });
    registry.add(model, defineAgent({ name: 'output-soft', model: model.name, tools: [lookupWeather], use: [softToolErrors()] }));
    calls.length = 0;
    const result = await worker.client.run('output-soft', 'Lisbon or Porto tomorrow?');
    expect(result.text).toBe('Lisbon: sunny, 24 °C. No forecast for Porto.');
    expect(calls.sort()).toEqual(['Lisbon', 'Porto']);
    expect(model.requests[1]!.request.messages.at(-1)).toEqual({
      role: 'tool',
      content: [
        { toolResponse: { name: 'lookup_weather', ref: '0', output: { city: 'Lisbon', sky: 'sunny', highC: 24 } } },
        { toolResponse: { name: 'lookup_weather', ref: '1', output: { error: SCHEMA_FAILURE } }, metadata: { toolError: true } },
      ],
    });
  });
});
