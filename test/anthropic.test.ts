/**
 * The anthropic provider against a loopback server that speaks the Messages API; and
 * Fallback across providers (OpenAI-compatible → Anthropic) in a real run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../src/core/messages';
import { defineAgent, type ModelContext } from '../src/define';
import { fallback } from '../src/features/fallback/fallback';
import { anthropicModel } from '../src/models/anthropic';
import { openAICompatibleModel } from '../src/models/openai-compatible';
import { Registry } from '../src/registry';
import { add } from './fixtures/tools';
import { scheduledActivities } from './support/history';
import { keelFailure } from './support/errors';
import { freePort } from './support/free-port';
import { startTestWorker } from './support/harness';
import { startFakeHttpServer, type FakeHttpServer } from './support/http-server';

let anthropic: FakeHttpServer;
let openai: FakeHttpServer;
beforeAll(async () => {
  [anthropic, openai] = await Promise.all([startFakeHttpServer(), startFakeHttpServer()]);
});
afterAll(async () => {
  await Promise.all([anthropic.close(), openai.close()]);
});

const context: ModelContext = { callIndex: 0, runId: 'test', heartbeat: () => undefined, signal: new AbortController().signal };
const request: ModelRequest = {
  messages: [
    { role: 'system', content: [{ text: 'Be brief.' }] },
    { role: 'user', content: [{ text: 'add 1 and 2' }] },
    { role: 'model', content: [{ text: 'adding' }, { toolRequest: { name: 'add', ref: 'toolu_1', input: { a: 1, b: 2 } } }] },
    { role: 'tool', content: [{ toolResponse: { name: 'add', ref: 'toolu_1', output: { sum: 3 } } }] },
    { role: 'user', content: [{ text: 'and now?' }] },
  ],
  tools: [{ name: 'add', description: 'Adds.', inputSchema: { type: 'object' } }],
  config: { temperature: 0 },
};
const message = (content: unknown[], stop = 'end_turn', usage = { input_tokens: 10, output_tokens: 4 }) => ({
  body: { id: 'msg_1', type: 'message', role: 'assistant', content, stop_reason: stop, usage },
});

describe('anthropic wire format', () => {
  it('sends system, alternating messages with tool_use/tool_result, tools and headers; reads the reply', async () => {
    const model = anthropicModel({ name: 'anthropic/claude-test', baseUrl: anthropic.url, apiKey: 'sk-ant' });
    anthropic.answer(
      message(
        [
          { type: 'text', text: 'sum again' },
          { type: 'tool_use', id: 'toolu_2', name: 'add', input: { a: 3, b: 4 } },
        ],
        'tool_use',
        { input_tokens: 20, output_tokens: 7 },
      ),
    );
    anthropic.requests.length = 0;
    const response = await model.generate(request, context);
    const seen = anthropic.requests[0]!;
    expect(anthropic.requests).toHaveLength(1);
    expect(seen.path).toBe('/v1/messages');
    expect(seen.headers['x-api-key']).toBe('sk-ant');
    expect(seen.headers['anthropic-version']).toBe('2023-06-01');
    expect(seen.body).toEqual({
      max_tokens: 4096,
      temperature: 0,
      model: 'claude-test',
      system: 'Be brief.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'add 1 and 2' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'adding' },
            { type: 'tool_use', id: 'toolu_1', name: 'add', input: { a: 1, b: 2 } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '{"sum":3}' },
            { type: 'text', text: 'and now?' },
          ],
        },
      ],
      tools: [{ name: 'add', description: 'Adds.', input_schema: { type: 'object' } }],
      // Asks for a stream; this server answers with plain JSON, which is read as such.
      stream: true,
    });
    expect(response).toEqual({
      message: { role: 'model', content: [{ text: 'sum again' }, { toolRequest: { name: 'add', ref: 'toolu_2', input: { a: 3, b: 4 } } }] },
      finishReason: 'stop',
      usage: { inputTokens: 20, outputTokens: 7, totalTokens: 27 },
    });
  });

  it('reads a streamed answer: text handed on piece by piece, tool input put together, usage and stop reason from their events', async () => {
    const model = anthropicModel({ name: 'anthropic/streamer', baseUrl: anthropic.url });
    const event = (type: string, value: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...value })}\n\n`;
    anthropic.answer({
      headers: { 'content-type': 'text/event-stream' },
      chunks: [
        event('message_start', { message: { id: 'msg_s', usage: { input_tokens: 21, output_tokens: 1 } } }),
        event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        event('ping', {}),
        event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'sum ' } }),
        event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'again' } }),
        event('content_block_stop', { index: 0 }),
        event('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'toolu_9', name: 'add', input: {} } }),
        event('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"a": 3, ' } }),
        event('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '"b": 4}' } }),
        event('content_block_stop', { index: 1 }),
        event('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } }),
        event('message_stop', {}),
      ],
    });
    const pieces: string[] = [];
    const response = await model.generate(request, { ...context, stream: (delta) => pieces.push(delta) });
    expect(pieces).toEqual(['sum ', 'again']);
    expect(response).toEqual({
      message: { role: 'model', content: [{ text: 'sum again' }, { toolRequest: { name: 'add', ref: 'toolu_9', input: { a: 3, b: 4 } } }] },
      finishReason: 'stop',
      usage: { inputTokens: 21, outputTokens: 9, totalTokens: 30 },
    });
    // An error event mid-stream: overloaded is UNAVAILABLE, for Retry to call again.
    anthropic.answer({
      headers: { 'content-type': 'text/event-stream' },
      chunks: [event('message_start', { message: { usage: {} } }), event('error', { error: { type: 'overloaded_error', message: 'Overloaded' } })],
    });
    await expect(model.generate(request, context)).rejects.toMatchObject({
      status: 'UNAVAILABLE',
      message: 'anthropic model "anthropic/streamer" failed mid-stream: Overloaded',
    });
  });

  it('marks soft tool errors as is_error tool results', async () => {
    const model = anthropicModel({ name: 'anthropic/m', baseUrl: anthropic.url });
    anthropic.answer(message([{ type: 'text', text: 'ok' }]));
    anthropic.requests.length = 0;
    await model.generate(
      {
        messages: [
          { role: 'user', content: [{ text: 'go' }] },
          { role: 'model', content: [{ toolRequest: { name: 'x', ref: 't1', input: {} } }] },
          { role: 'tool', content: [{ toolResponse: { name: 'x', ref: 't1', output: { error: 'boom' } }, metadata: { toolError: true } }] },
        ],
        tools: [],
      },
      context,
    );
    const body = anthropic.requests[0]!.body as { messages: Array<{ content: unknown[] }> };
    expect(body.messages[2]!.content).toEqual([{ type: 'tool_result', tool_use_id: 't1', content: '{"error":"boom"}', is_error: true }]);
  });

  it("sends a tool response's images as base64 image blocks inside its tool_result, not as text", async () => {
    const model = anthropicModel({ name: 'anthropic/m', baseUrl: anthropic.url });
    anthropic.answer(message([{ type: 'text', text: 'a bar chart' }]));
    anthropic.requests.length = 0;
    await model.generate(
      {
        messages: [
          { role: 'user', content: [{ text: 'chart it' }] },
          { role: 'model', content: [{ toolRequest: { name: 'chart', ref: 'c1', input: {} } }, { toolRequest: { name: 'add', ref: 'c2', input: {} } }] },
          {
            role: 'tool',
            content: [
              {
                toolResponse: {
                  name: 'chart',
                  ref: 'c1',
                  output: { content: [{ text: 'the chart' }, { media: { url: 'data:image/png;base64,iVBORw0=', contentType: 'image/png' } }] },
                },
              },
              { toolResponse: { name: 'add', ref: 'c2', output: { sum: 3 } } },
            ],
          },
        ],
        tools: [],
      },
      context,
    );
    const body = anthropic.requests[0]!.body as { messages: Array<{ content: unknown[] }> };
    expect(body.messages[2]!.content).toEqual([
      {
        type: 'tool_result',
        tool_use_id: 'c1',
        content: [
          { type: 'text', text: 'the chart' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0=' } },
        ],
      },
      { type: 'tool_result', tool_use_id: 'c2', content: '{"sum":3}' },
    ]);
  });

  it('maps stop reasons', async () => {
    const model = anthropicModel({ name: 'anthropic/m', baseUrl: anthropic.url });
    for (const [wire, ours] of [
      ['max_tokens', 'length'],
      ['refusal', 'blocked'],
      ['stop_sequence', 'stop'],
      ['pause_turn', 'other'],
    ] as const) {
      anthropic.answer(message([{ type: 'text', text: 'x' }], wire));
      expect((await model.generate(request, context)).finishReason).toBe(ours);
    }
  });

  it.each([
    [400, 'INVALID_ARGUMENT'],
    [401, 'UNAUTHENTICATED'],
    [403, 'PERMISSION_DENIED'],
    [404, 'NOT_FOUND'],
    [429, 'RESOURCE_EXHAUSTED'],
    [500, 'INTERNAL'],
    [529, 'UNAVAILABLE'],
  ] as const)('maps HTTP %i to %s without retrying', async (code, status) => {
    const model = anthropicModel({ name: 'anthropic/m', baseUrl: anthropic.url });
    anthropic.answer({ status: code, body: { type: 'error', error: { type: 'some_error', message: `anthropic said ${code}` } } });
    anthropic.requests.length = 0;
    const error = await keelFailure(model.generate(request, context));
    expect(error.status).toBe(status);
    expect(error.message).toContain(`anthropic said ${code}`);
    expect(anthropic.requests).toHaveLength(1);
  });

  it('keeps Retry-After and reports an unreachable server as UNAVAILABLE', async () => {
    const model = anthropicModel({ name: 'anthropic/m', baseUrl: anthropic.url });
    anthropic.answer({ status: 429, body: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } }, headers: { 'retry-after': '2' } });
    const limited = await keelFailure(model.generate(request, context));
    expect(limited.toJSON()).toEqual({ status: 'RESOURCE_EXHAUSTED', message: 'anthropic model "anthropic/m" answered HTTP 429: slow down' });
    expect(limited.details.retryAfterMs).toBe(2000);
    const unreachable = anthropicModel({ name: 'anthropic/m', baseUrl: `http://127.0.0.1:${await freePort()}` });
    const error = await keelFailure(unreachable.generate(request, context));
    expect(error.status).toBe('UNAVAILABLE');
    expect(error.message).toMatch(/^anthropic model "anthropic\/m" could not be reached: .*ECONNREFUSED/);
  });
});

describe('fallback across providers', () => {
  it('falls over from an OpenAI-compatible model that is down to an Anthropic model, each call its own activity', async () => {
    // turn 1: openai 503 → anthropic asks for add; turn 2: openai 503 again → anthropic answers
    const primary = openAICompatibleModel({ name: 'openai/primary', baseUrl: openai.url });
    const secondary = anthropicModel({ name: 'anthropic/secondary', baseUrl: anthropic.url, config: { temperature: 0.5 } });
    const registry = new Registry().add(
      primary,
      secondary,
      add,
      defineAgent({
        name: 'cross-provider',
        model: primary.name,
        tools: [add],
        use: [fallback({ models: [{ name: secondary.name, config: { max_tokens: 256 } }] })],
      }),
    );
    const worker = await startTestWorker(registry);
    try {
      openai.answer({ status: 503, body: { error: { message: 'openai overloaded' } } });
      anthropic.answer(
        message([{ type: 'tool_use', id: 'toolu_9', name: 'add', input: { a: 20, b: 22 } }], 'tool_use', { input_tokens: 5, output_tokens: 2 }),
        message([{ type: 'text', text: '42' }], 'end_turn', { input_tokens: 9, output_tokens: 1 }),
      );
      openai.requests.length = 0;
      anthropic.requests.length = 0;
      const handle = await worker.client.start('cross-provider', 'what is 20+22?');
      const result = await handle.result();
      expect(result.text).toBe('42');
      expect(result.usage).toEqual({ inputTokens: 14, outputTokens: 3, totalTokens: 17 });
      expect(openai.requests).toHaveLength(2);
      expect(anthropic.requests).toHaveLength(2);
      expect(anthropic.requests[0]!.body as { max_tokens: number; temperature: number }).toMatchObject({ max_tokens: 256, temperature: 0.5 });
      expect(await scheduledActivities(worker.client.temporal, handle.runId)).toEqual(['callModel', 'callModel', 'callTool', 'callModel', 'callModel']);
      const history = await worker.client.temporal.workflow.getHandle(handle.runId).fetchHistory();
      const summaries = (history.events ?? [])
        .filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel')
        .map((event) => JSON.parse(Buffer.from(event.userMetadata!.summary!.data!).toString()));
      expect(summaries).toEqual(['model openai/primary', 'model anthropic/secondary', 'model openai/primary', 'model anthropic/secondary']);
    } finally {
      await worker.stop();
    }
  });
});
