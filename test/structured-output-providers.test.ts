/**
 * Structured output with the HTTP providers and the AI SDK bridge, against a loopback server
 * speaking their wire format (and the AI SDK's mock model): each asks for the schema its own
 * way, and the answer comes back as the JSON text the run checks.
 */
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../src/core/messages';
import type { ModelContext } from '../src/define';
import { aiSdkModel } from '../src/models/ai-sdk';
import { anthropicModel } from '../src/models/anthropic';
import { openAICompatibleModel } from '../src/models/openai-compatible';
import { startFakeHttpServer, type FakeHttpServer } from './support/http-server';

let server: FakeHttpServer;
beforeAll(async () => {
  server = await startFakeHttpServer();
});
afterAll(async () => {
  await server.close();
});

const context: ModelContext = { callIndex: 0, runId: 'test', heartbeat: () => undefined, signal: new AbortController().signal };
const schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
  additionalProperties: false,
};
const request = (tools: ModelRequest['tools'] = []): ModelRequest => ({
  messages: [{ role: 'user', content: [{ text: 'where?' }] }],
  tools,
  output: { format: 'json', schema, name: 'place' },
});
const { $schema: _dialect, ...sentSchema } = schema;

describe('structured output on the wire', () => {
  it('openai-compatible sends response_format json_schema and reads the JSON content', async () => {
    const model = openAICompatibleModel({ name: 'openai/structured', baseUrl: `${server.url}/v1`, apiKey: 'sk-test', stream: false });
    server.requests.length = 0;
    server.answer({ body: { choices: [{ index: 0, message: { role: 'assistant', content: '{"city":"Oslo"}' }, finish_reason: 'stop' }] } });
    const response = await model.generate(request(), context);
    expect(server.requests[0]!.body).toMatchObject({ response_format: { type: 'json_schema', json_schema: { name: 'place', schema: sentSchema } } });
    expect(response.message.content).toEqual([{ text: '{"city":"Oslo"}' }]);
    expect(response.finishReason).toBe('stop');
  });

  it('anthropic forces the answer tool and reads the answer from its tool_use input', async () => {
    const model = anthropicModel({ name: 'anthropic/structured', baseUrl: server.url, apiKey: 'sk-ant', stream: false });
    server.requests.length = 0;
    server.answer({
      body: {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me answer.' },
          { type: 'tool_use', id: 'toolu_1', name: 'place', input: { city: 'Oslo' } },
        ],
        stop_reason: 'tool_use',
        usage: { input_tokens: 3, output_tokens: 2 },
      },
    });
    const response = await model.generate(request(), context);
    const body = server.requests[0]!.body as { tools: unknown[]; tool_choice: unknown };
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'place' });
    expect(body.tools).toEqual([{ name: 'place', description: expect.any(String) as string, input_schema: sentSchema }]);
    expect(response.message.content).toEqual([{ text: '{"city":"Oslo"}' }]);
    expect(response.finishReason).toBe('stop');
  });

  it('anthropic lets an agent with tools call them (tool_choice any) beside the answer tool', async () => {
    const model = anthropicModel({ name: 'anthropic/structured-tools', baseUrl: server.url, apiKey: 'sk-ant', stream: false });
    server.requests.length = 0;
    server.answer({
      body: {
        id: 'msg_2',
        type: 'message',
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_2', name: 'lookup', input: { q: 'x' } }],
        stop_reason: 'tool_use',
        usage: { input_tokens: 3, output_tokens: 2 },
      },
    });
    const response = await model.generate(request([{ name: 'lookup', description: 'Looks up.', inputSchema: { type: 'object' } }]), context);
    const body = server.requests[0]!.body as { tools: Array<{ name: string }>; tool_choice: unknown };
    expect(body.tool_choice).toEqual({ type: 'any' });
    expect(body.tools.map((tool) => tool.name)).toEqual(['lookup', 'place']);
    expect(response.message.content).toEqual([{ toolRequest: { name: 'lookup', ref: 'toolu_2', input: { q: 'x' } } }]);
    expect(response.finishReason).toBe('stop');
  });

  it("the AI SDK bridge asks for the specification's JSON response format", async () => {
    const mock = new MockLanguageModelV3({
      doGenerate: async () => ({
        content: [{ type: 'text' as const, text: '{"city":"Oslo"}' }],
        finishReason: { unified: 'stop' as const, raw: 'stop' },
        usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } },
        warnings: [],
      }),
    });
    const response = await aiSdkModel({ name: 'mock/structured', model: mock, stream: false }).generate(request(), context);
    expect(mock.doGenerateCalls[0]!.responseFormat).toEqual({ type: 'json', schema, name: 'place' });
    expect(response.message.content).toEqual([{ text: '{"city":"Oslo"}' }]);
  });
});
