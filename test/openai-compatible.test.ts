/**
 * The openai-compatible provider against a loopback server that speaks Chat Completions:
 * request shape, tool calls, usage, errors mapped to statuses, Retry-After, no retries of
 * its own; and one whole run through the workflow.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runErrorOf } from '../src/client/keel-client';
import { parseConfig } from '../src/config/load';
import type { ModelRequest } from '../src/core/messages';
import { defineAgent, type ModelContext } from '../src/define';
import { openAICompatibleModel } from '../src/models/openai-compatible';
import { Registry } from '../src/registry';
import { modelFromConfig } from '../src/worker/load-registry';
import { add } from './fixtures/tools';
import { keelFailure } from './support/errors';
import { freePort } from './support/free-port';
import { startTestWorker } from './support/harness';
import { startFakeHttpServer, type FakeHttpServer } from './support/http-server';

let server: FakeHttpServer;
beforeAll(async () => {
  server = await startFakeHttpServer();
});
afterAll(async () => {
  await server.close();
});

const context: ModelContext = { callIndex: 0, runId: 'test', heartbeat: () => undefined, signal: new AbortController().signal };
const request: ModelRequest = {
  messages: [
    { role: 'system', content: [{ text: 'Be brief.' }] },
    { role: 'user', content: [{ text: 'add 1 and 2' }] },
    { role: 'model', content: [{ text: 'adding' }, { toolRequest: { name: 'add', ref: 'call_1', input: { a: 1, b: 2 } } }] },
    { role: 'tool', content: [{ toolResponse: { name: 'add', ref: 'call_1', output: { sum: 3 } } }] },
  ],
  tools: [{ name: 'add', description: 'Adds.', inputSchema: { type: 'object', properties: { a: { type: 'number' } } } }],
};
const ok = (message: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  body: { id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'stop' }], ...extra },
});

describe('openai-compatible wire format', () => {
  it('asks for one whole answer when its temporal.yaml entry says stream: false, and for a stream by default', async () => {
    const entry = { name: 'openai/yaml-model', provider: 'openai-compatible', baseUrl: `${server.url}/v1` };
    const [whole, streamed] = parseConfig(
      {
        models: [
          { ...entry, stream: false },
          { ...entry, name: 'openai/yaml-streamed' },
        ],
      },
      { baseDir: process.cwd(), env: {} },
    ).models;
    server.answer(ok({ content: 'hi' }));
    server.requests.length = 0;
    expect((await modelFromConfig(whole!).generate(request, context)).message.content).toEqual([{ text: 'hi' }]);
    await modelFromConfig(streamed!).generate(request, context);
    expect(server.requests.map((seen) => (seen.body as { stream?: boolean }).stream)).toEqual([undefined, true]);
    expect(() => parseConfig({ models: [{ ...entry, stream: 'no' }] }, { baseDir: process.cwd(), env: {} })).toThrow(
      'models[0].stream: Invalid input: expected boolean, received string',
    );
  });

  it('sends messages, tools and the key; reads text, tool calls and usage', async () => {
    const model = openAICompatibleModel({ name: 'openai/test-model', baseUrl: `${server.url}/v1`, apiKey: 'sk-test', config: { temperature: 0 } });
    server.answer({
      body: {
        choices: [
          {
            message: {
              role: 'assistant',
              content: 'sum is',
              tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'add', arguments: '{"a":3,"b":4}' } }],
            },
            finish_reason: 'tool_calls',
          },
        ],
        usage: { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16, completion_tokens_details: { reasoning_tokens: 2 } },
      },
    });
    server.requests.length = 0;
    const response = await model.generate(request, context);
    expect(server.requests).toHaveLength(1);
    const seen = server.requests[0]!;
    expect(seen.path).toBe('/v1/chat/completions');
    expect(seen.headers.authorization).toBe('Bearer sk-test');
    expect(seen.body).toEqual({
      temperature: 0,
      model: 'test-model',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'add 1 and 2' },
        { role: 'assistant', content: 'adding', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":2}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"sum":3}' },
      ],
      tools: [{ type: 'function', function: { name: 'add', description: 'Adds.', parameters: { type: 'object', properties: { a: { type: 'number' } } } } }],
      // Asks for a stream; this server answers with plain JSON, which is read as such.
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(response).toEqual({
      message: { role: 'model', content: [{ text: 'sum is' }, { toolRequest: { name: 'add', ref: 'call_2', input: { a: 3, b: 4 } } }] },
      finishReason: 'stop',
      usage: { inputTokens: 11, outputTokens: 3, totalTokens: 16, thoughtsTokens: 2 },
    });
  });

  it('reads a streamed answer: text handed on piece by piece, tool calls put together, usage from the last chunk', async () => {
    const model = openAICompatibleModel({ name: 'openai/streamer', baseUrl: `${server.url}/v1` });
    const chunk = (value: object) => `data: ${JSON.stringify(value)}\n\n`;
    server.answer({
      headers: { 'content-type': 'text/event-stream' },
      chunks: [
        chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'sum ' } }] }),
        chunk({ choices: [{ index: 0, delta: { content: 'is' } }] }),
        ': a comment line\n\n',
        chunk({
          choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_7', type: 'function', function: { name: 'add', arguments: '{"a":' } }] } }],
        }),
        chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '3,"b":4}' } }] } }] }),
        chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }),
        chunk({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 } }),
        'data: [DONE]\n\n',
      ],
    });
    const pieces: string[] = [];
    const response = await model.generate(request, { ...context, stream: (delta) => pieces.push(delta) });
    expect(pieces).toEqual(['sum ', 'is']);
    expect(response).toEqual({
      message: { role: 'model', content: [{ text: 'sum is' }, { toolRequest: { name: 'add', ref: 'call_7', input: { a: 3, b: 4 } } }] },
      finishReason: 'stop',
      usage: { inputTokens: 9, outputTokens: 4, totalTokens: 13 },
    });
    // The deadline covers the stream too: an answer still streaming when it passes is DEADLINE_EXCEEDED.
    server.answer({
      headers: { 'content-type': 'text/event-stream' },
      chunks: [chunk({ choices: [{ index: 0, delta: { content: 'slow' } }] }), 'data: [DONE]\n\n'],
      chunkDelayMs: 600,
    });
    const slow = openAICompatibleModel({ name: 'openai/slow', baseUrl: `${server.url}/v1`, timeoutMs: 300 });
    await expect(slow.generate(request, context)).rejects.toMatchObject({
      status: 'DEADLINE_EXCEEDED',
      message: 'openai-compatible model "openai/slow" did not finish its answer in time',
    });
    // stream: false asks for one JSON answer.
    server.requests.length = 0;
    server.answer(ok({ content: 'whole' }));
    await openAICompatibleModel({ name: 'openai/whole', baseUrl: `${server.url}/v1`, stream: false }).generate(request, context);
    expect(server.requests[0]!.body).not.toHaveProperty('stream');
  });

  it("sends a tool response's images as a user message of image_url parts after the tool messages, not as text", async () => {
    const model = openAICompatibleModel({ name: 'openai/test-model', baseUrl: `${server.url}/v1` });
    server.answer(ok({ content: 'a bar chart' }));
    server.requests.length = 0;
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
    const body = server.requests[0]!.body as { messages: unknown[] };
    expect(body.messages.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: 'the chart' },
      { role: 'tool', tool_call_id: 'c2', content: '{"sum":3}' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Images from tool call c1 (chart):' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0=' } },
        ],
      },
    ]);
  });

  it('maps finish reasons', async () => {
    const model = openAICompatibleModel({ name: 'openai/m', baseUrl: server.url });
    for (const [wire, ours] of [
      ['length', 'length'],
      ['content_filter', 'blocked'],
      ['weird', 'other'],
    ] as const) {
      server.answer({ body: { choices: [{ message: { content: 'x' }, finish_reason: wire }] } });
      expect((await model.generate(request, context)).finishReason).toBe(ours);
    }
  });

  it.each([
    [400, 'INVALID_ARGUMENT'],
    [401, 'UNAUTHENTICATED'],
    [403, 'PERMISSION_DENIED'],
    [404, 'NOT_FOUND'],
    [409, 'ABORTED'],
    [429, 'RESOURCE_EXHAUSTED'],
    [500, 'INTERNAL'],
    [501, 'UNIMPLEMENTED'],
    [502, 'INTERNAL'],
    [503, 'UNAVAILABLE'],
    [504, 'DEADLINE_EXCEEDED'],
  ] as const)("maps HTTP %i to %s, with the body's message, and does not retry", async (code, status) => {
    const model = openAICompatibleModel({ name: 'openai/m', baseUrl: server.url });
    server.answer({ status: code, body: { error: { message: `upstream said ${code}` } } });
    server.requests.length = 0;
    const error = await keelFailure(model.generate(request, context));
    expect(error.status).toBe(status);
    expect(error.message).toContain(`HTTP ${code}: upstream said ${code}`);
    expect(server.requests).toHaveLength(1);
  });

  it('carries Retry-After (seconds) as retryAfterMs', async () => {
    const model = openAICompatibleModel({ name: 'openai/m', baseUrl: server.url });
    server.answer({ status: 429, body: { error: { message: 'slow down' } }, headers: { 'retry-after': '7' } });
    const error = await keelFailure(model.generate(request, context));
    expect(error.status).toBe('RESOURCE_EXHAUSTED');
    expect(error.details.retryAfterMs).toBe(7000);
  });

  it('reports an unreachable server as UNAVAILABLE, naming the model', async () => {
    const model = openAICompatibleModel({ name: 'openai/m', baseUrl: `http://127.0.0.1:${await freePort()}` });
    const error = await keelFailure(model.generate(request, context));
    expect(error.status).toBe('UNAVAILABLE');
    expect(error.message).toMatch(/^openai-compatible model "openai\/m" could not be reached: .*ECONNREFUSED/);
  });

  it('reports malformed tool arguments and unreadable bodies as INTERNAL', async () => {
    const model = openAICompatibleModel({ name: 'openai/m', baseUrl: server.url });
    server.answer(ok({ content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'add', arguments: '{not json' } }] }));
    expect((await keelFailure(model.generate(request, context))).toJSON()).toEqual({
      status: 'INTERNAL',
      message: 'openai-compatible model "openai/m" sent malformed JSON arguments for tool "add"',
    });
    server.answer({ raw: 'not json at all' });
    const unreadable = await keelFailure(model.generate(request, context));
    expect(unreadable.status).toBe('INTERNAL');
    expect(unreadable.message).toMatch(/^openai-compatible model "openai\/m" sent a response keel cannot read: /);
  });

  it('takes base URL and key from OPENAI_BASE_URL / OPENAI_API_KEY', async () => {
    const saved = { base: process.env.OPENAI_BASE_URL, key: process.env.OPENAI_API_KEY };
    process.env.OPENAI_BASE_URL = `${server.url}/env`;
    process.env.OPENAI_API_KEY = 'sk-env';
    try {
      const model = openAICompatibleModel({ name: 'openai/m' });
      server.answer(ok({ content: 'hi' }));
      server.requests.length = 0;
      await model.generate(request, context);
      expect(server.requests[0]!.path).toBe('/env/chat/completions');
      expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-env');
    } finally {
      process.env.OPENAI_BASE_URL = saved.base;
      process.env.OPENAI_API_KEY = saved.key;
      if (saved.base === undefined) delete process.env.OPENAI_BASE_URL;
      if (saved.key === undefined) delete process.env.OPENAI_API_KEY;
    }
  });
});

describe('openai-compatible in a run', () => {
  it('drives the tool loop and a provider error fails the run with its status', async () => {
    const model = openAICompatibleModel({ name: 'openai/loop', baseUrl: server.url });
    const registry = new Registry().add(model, add, defineAgent({ name: 'openai-agent', model: model.name, tools: [add] }));
    const worker = await startTestWorker(registry);
    try {
      server.answer(
        ok(
          { content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":2}' } }] },
          { usage: { prompt_tokens: 5, completion_tokens: 1 } },
        ),
        ok({ content: 'four' }, { usage: { prompt_tokens: 9, completion_tokens: 1 } }),
      );
      server.requests.length = 0;
      const result = await worker.client.run('openai-agent', 'what is 2+2?');
      expect(result.text).toBe('four');
      expect(result.usage).toEqual({ inputTokens: 14, outputTokens: 2 });
      expect((server.requests[1]!.body as { messages: unknown[] }).messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_a', content: '{"sum":4}' });

      server.answer({ status: 503, body: { error: { message: 'overloaded' } } });
      const error = await worker.client.run('openai-agent', 'again').then(() => undefined, runErrorOf);
      expect(error?.status).toBe('UNAVAILABLE');
      expect(error?.message).toContain('overloaded');

      // Usage keel cannot count fails the call, as a tool's report would, naming the model and the field.
      server.answer(ok({ content: 'cheap' }, { usage: { prompt_tokens: -7, completion_tokens: 1 } }));
      const garbage = await worker.client.run('openai-agent', 'cheaper').then(() => undefined, runErrorOf);
      expect(garbage).toMatchObject({
        status: 'DATA_LOSS',
        message: 'model "openai/loop" reported usage keel cannot count: usage.inputTokens: must not be negative (got -7)',
      });
    } finally {
      await worker.stop();
    }
  });
});

describe('openai-compatible streaming in a run', () => {
  it('shows the text to a client while the model writes it', async () => {
    const chunk = (content: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
    server.answer({
      headers: { 'content-type': 'text/event-stream' },
      chunks: [chunk('Porto '), chunk('is '), chunk('lovely'), 'data: [DONE]\n\n'],
      chunkDelayMs: 400,
    });
    const model = openAICompatibleModel({ name: 'openai/streamed-run', baseUrl: `${server.url}/v1` });
    const worker = await startTestWorker(new Registry().add(model, defineAgent({ name: 'streamed-run', model: model.name })), {
      worker: { maxHeartbeatThrottleInterval: '100 milliseconds' },
    });
    try {
      const handle = await worker.client.start('streamed-run', 'where?');
      const texts: Array<{ delta: string; final: boolean }> = [];
      for await (const event of handle.events({ intervalMs: 50 })) if (event.type === 'text') texts.push({ delta: event.delta, final: event.final });
      expect(texts.filter((text) => !text.final).length).toBeGreaterThan(1);
      expect(texts.map((text) => text.delta).join('')).toBe('Porto is lovely');
    } finally {
      await worker.stop();
    }
  });
});
