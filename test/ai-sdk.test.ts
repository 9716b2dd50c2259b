/**
 * AI SDK language models as keel models: the AI SDK's own mock model (what keel sends, what
 * it reads back, errors mapped to statuses that Retry sees), and a real provider package
 * (@ai-sdk/openai-compatible) declared in YAML, against a loopback server that speaks Chat
 * Completions, through whole runs.
 */
import { APICallError } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load';
import type { ModelRequest } from '../src/core/messages';
import { defineAgent, type ModelContext } from '../src/define';
import { retry } from '../src/features/retry/retry';
import { aiSdkModel, type AiSdkLanguageModel } from '../src/models/ai-sdk';
import { Registry } from '../src/registry';
import { loadRegistry } from '../src/worker/load-registry';
import { add } from './fixtures/tools';
import { keelFailure } from './support/errors';
import { sharedTestWorker, startTestWorker } from './support/harness';
import { startFakeHttpServer, type FakeHttpServer } from './support/http-server';
import { killAfterEach, ROOT, runKeel, spawnKeel, writeTestConfig } from './support/processes';

const context: ModelContext = { callIndex: 0, runId: 'test', heartbeat: () => undefined, signal: new AbortController().signal };
const request: ModelRequest = {
  messages: [
    { role: 'system', content: [{ text: 'Be brief.' }] },
    { role: 'user', content: [{ text: 'add 1 and 2' }, { media: { url: 'data:image/png;base64,iVBORw0K', contentType: 'image/png' } }] },
    { role: 'model', content: [{ text: 'adding' }, { toolRequest: { name: 'add', ref: 'call_1', input: { a: 1, b: 2 } } }] },
    { role: 'tool', content: [{ toolResponse: { name: 'add', ref: 'call_1', output: { sum: 3 } } }] },
  ],
  tools: [{ name: 'add', description: 'Adds.', inputSchema: { type: 'object', properties: { a: { type: 'number' } } } }],
  config: { temperature: 0 },
};

const usage = (input: number, output: number, reasoning?: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: 2, cacheWrite: undefined },
  outputTokens: { total: output, text: reasoning === undefined ? output : output - reasoning, reasoning },
});

/** A mock whose replies are given in order (the last repeats). */
function mockModel(...results: Array<Awaited<ReturnType<MockLanguageModelV3['doGenerate']>> | Error>) {
  let call = 0;
  return new MockLanguageModelV3({
    provider: 'mock-provider',
    modelId: 'mock-1',
    doGenerate: async () => {
      const result = results[Math.min(call++, results.length - 1)]!;
      if (result instanceof Error) throw result;
      return result;
    },
  });
}

const text = (value: string) => ({
  content: [{ type: 'text' as const, text: value }],
  finishReason: { unified: 'stop' as const, raw: 'stop' },
  usage: usage(5, 2),
  warnings: [],
});

describe.concurrent('aiSdkModel with the AI SDK mock model', () => {
  it('sends the conversation, tools and call options; reads text, tool calls, usage and the finish reason', async () => {
    const mock = mockModel({
      content: [
        { type: 'reasoning', text: 'thinking' },
        { type: 'text', text: 'sum is' },
        { type: 'tool-call', toolCallId: 'call_2', toolName: 'add', input: '{"a":3,"b":4}' },
      ],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage: usage(11, 5, 2),
      warnings: [],
    });
    const response = await aiSdkModel({ name: 'mock/one', model: mock, config: { maxOutputTokens: 100 }, stream: false }).generate(request, context);

    expect(mock.doGenerateCalls).toHaveLength(1);
    const sent = mock.doGenerateCalls[0]!;
    expect(sent).toMatchObject({ temperature: 0, maxOutputTokens: 100, abortSignal: context.signal });
    expect(sent.prompt).toEqual([
      { role: 'system', content: 'Be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'add 1 and 2' },
          { type: 'file', mediaType: 'image/png', data: 'iVBORw0K' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'adding' },
          { type: 'tool-call', toolCallId: 'call_1', toolName: 'add', input: { a: 1, b: 2 } },
        ],
      },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_1', toolName: 'add', output: { type: 'json', value: { sum: 3 } } }] },
    ]);
    expect(sent.tools).toEqual([
      { type: 'function', name: 'add', description: 'Adds.', inputSchema: { type: 'object', properties: { a: { type: 'number' } } } },
    ]);
    expect(response).toEqual({
      message: {
        role: 'model',
        content: [{ custom: { reasoning: 'thinking' } }, { text: 'sum is' }, { toolRequest: { name: 'add', ref: 'call_2', input: { a: 3, b: 4 } } }],
      },
      finishReason: 'stop',
      usage: { inputTokens: 11, outputTokens: 3, thoughtsTokens: 2, cachedContentTokens: 2, totalTokens: 16 },
    });
  });

  it('reads the flat usage and string finish reasons of specification v2 (AI SDK 5)', async () => {
    const v2: AiSdkLanguageModel = {
      specificationVersion: 'v2',
      provider: 'v2-provider',
      modelId: 'old',
      doGenerate: async () => ({
        content: [{ type: 'text', text: 'cut' }],
        finishReason: 'length',
        usage: { inputTokens: 4, outputTokens: 9, totalTokens: 13, reasoningTokens: 1 },
      }),
    };
    expect(await aiSdkModel({ name: 'v2/old', model: v2 }).generate(request, context)).toEqual({
      message: { role: 'model', content: [{ text: 'cut' }] },
      finishReason: 'length',
      usage: { inputTokens: 4, outputTokens: 8, thoughtsTokens: 1, totalTokens: 13 },
    });
  });

  it("maps the provider's errors to statuses, with Retry-After, and refuses config that is not a call option", async () => {
    const overloaded = new APICallError({
      message: 'overloaded',
      url: 'http://x',
      requestBodyValues: {},
      statusCode: 429,
      responseHeaders: { 'retry-after': '3' },
      isRetryable: true,
    });
    expect(await keelFailure(aiSdkModel({ name: 'mock/busy', model: mockModel(overloaded), stream: false }).generate(request, context))).toMatchObject({
      status: 'RESOURCE_EXHAUSTED',
      message: 'ai-sdk model "mock/busy" answered HTTP 429: overloaded',
      details: { httpStatus: 429, retryAfterMs: 3000, modelName: 'mock/busy' },
    });
    const unreachable = new APICallError({ message: 'Cannot connect to API: connect ECONNREFUSED', url: 'http://x', requestBodyValues: {}, isRetryable: true });
    expect(await keelFailure(aiSdkModel({ name: 'mock/away', model: mockModel(unreachable), stream: false }).generate(request, context))).toMatchObject({
      status: 'UNAVAILABLE',
    });
    expect(
      await keelFailure(
        aiSdkModel({ name: 'mock/cfg', model: mockModel(text('x')), stream: false }).generate({ ...request, config: { temprature: 1 } }, context),
      ),
    ).toMatchObject({
      status: 'INVALID_ARGUMENT',
      message: expect.stringContaining('config "temprature" is not an AI SDK call option'),
    });
    expect(() => aiSdkModel({ name: 'bad', model: { doGenerate: () => undefined } as unknown as AiSdkLanguageModel })).toThrow(
      'aiSdkModel("bad"): model must be an AI SDK LanguageModel of specification v2, v3 or v4 (AI SDK 5 to 7); got an object without specificationVersion',
    );
  });
});

describe.concurrent("tool results carrying media (an MCP tool's image)", () => {
  const image = { media: { url: 'data:image/png;base64,iVBORw0K', contentType: 'image/png' } };
  const withImage: ModelRequest = {
    messages: [
      { role: 'user', content: [{ text: 'chart it' }] },
      { role: 'model', content: [{ toolRequest: { name: 'chart', ref: 'c1', input: {} } }] },
      {
        role: 'tool',
        content: [
          {
            toolResponse: {
              name: 'chart',
              ref: 'c1',
              output: { content: [{ text: 'the chart' }, image, { media: { url: 'https://x.test/a.pdf', contentType: 'application/pdf' } }] },
            },
          },
        ],
      },
    ],
    tools: [],
  };
  const toolResult = (model: { doGenerateCalls: Array<{ prompt: unknown[] }> }) =>
    (model.doGenerateCalls[0]!.prompt.at(-1) as { content: Array<{ output: unknown }> }).content[0]!.output;

  it('reach a v3 model as image and file content, not as base64 in text', async () => {
    const mock = mockModel(text('a rising line'));
    await aiSdkModel({ name: 'mock/v3', model: mock, stream: false }).generate(withImage, context);
    expect(toolResult(mock)).toEqual({
      type: 'content',
      value: [
        { type: 'text', text: 'the chart' },
        { type: 'image-data', data: 'iVBORw0K', mediaType: 'image/png' },
        { type: 'file-url', url: 'https://x.test/a.pdf', mediaType: 'application/pdf' },
      ],
    });
  });

  it('reach a v2 model as its media parts; a URL, which v2 tool results cannot carry, is named in the text', async () => {
    const calls: Array<{ prompt: unknown[] }> = [];
    const v2: AiSdkLanguageModel = {
      specificationVersion: 'v2',
      provider: 'v2-provider',
      modelId: 'old',
      doGenerate: async (options: { prompt: unknown[] }) => {
        calls.push(options);
        return { content: [{ type: 'text', text: 'ok' }], finishReason: 'stop', usage: {} };
      },
    };
    await aiSdkModel({ name: 'v2/media', model: v2 }).generate(withImage, context);
    expect(toolResult({ doGenerateCalls: calls })).toEqual({
      type: 'content',
      value: [
        { type: 'text', text: 'the chart' },
        { type: 'media', data: 'iVBORw0K', mediaType: 'image/png' },
        { type: 'text', text: '[application/pdf: https://x.test/a.pdf]' },
      ],
    });
  });
});

describe.concurrent('AI SDK models in runs', () => {
  let server: FakeHttpServer;
  beforeAll(async () => {
    server = await startFakeHttpServer();
  });
  afterAll(async () => {
    await server.close();
  });

  // A 503 first (Retry calls again), then a tool call, then text.
  const flaky = mockModel(
    new APICallError({ message: 'unavailable', url: 'http://x', requestBodyValues: {}, statusCode: 503, isRetryable: true }),
    {
      content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'add', input: '{"a":2,"b":3}' }],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage: usage(10, 4),
      warnings: [],
    },
    text('five'),
  );
  const registry = new Registry().add(
    add,
    aiSdkModel({ name: 'mock/flaky', model: flaky, stream: false }),
    defineAgent({ name: 'ai-sdk-mock', model: 'mock/flaky', tools: [add], use: [retry({ maxRetries: 2, initialDelayMs: 10 })] }),
  );
  const worker = sharedTestWorker(registry);

  it('runs a tool loop on the mock model, Retry deciding over its 503', async () => {
    const result = await worker().client.run('ai-sdk-mock', 'add 2 and 3');
    expect(result).toMatchObject({ text: 'five', finishReason: 'stop', turns: 2 });
    expect(flaky.doGenerateCalls).toHaveLength(3);
    expect(flaky.doGenerateCalls[2]!.prompt.at(-1)).toEqual({
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'add', output: { type: 'json', value: { sum: 5 } } }],
    });
  });

  it('runs a model of @ai-sdk/openai-compatible declared in temporal.yaml against a loopback server', async () => {
    const config = parseConfig(
      {
        models: [
          {
            name: 'local/llama',
            provider: 'ai-sdk',
            package: '@ai-sdk/openai-compatible',
            factory: 'createOpenAICompatible',
            options: { name: 'local', baseURL: `${server.url}/v1` },
            optionsFromEnv: { apiKey: 'KEEL_TEST_LOCAL_KEY' },
            model: 'llama-3',
          },
        ],
        agents: [{ name: 'ai-sdk-yaml', model: 'local/llama', tools: ['add'] }],
      },
      { baseDir: ROOT, env: {} },
    );
    process.env.KEEL_TEST_LOCAL_KEY = 'sk-local';
    const yamlRegistry = await loadRegistry(config, new Registry().add(add));
    delete process.env.KEEL_TEST_LOCAL_KEY;
    for (const definition of [yamlRegistry.models.get('local/llama')!, yamlRegistry.agents.get('ai-sdk-yaml')!]) registry.add(definition);

    // The provider streams by default: the server answers each call with Chat Completions chunks.
    const chunk = (value: object) => `data: ${JSON.stringify({ id: 'a', object: 'chat.completion.chunk', created: 0, model: 'llama-3', ...value })}\n\n`;
    server.answer(
      {
        headers: { 'content-type': 'text/event-stream' },
        chunks: [
          chunk({
            choices: [
              {
                index: 0,
                delta: { role: 'assistant', tool_calls: [{ index: 0, id: 'call_9', type: 'function', function: { name: 'add', arguments: '{"a":1,' } }] },
              },
            ],
          }),
          chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"b":1}' } }] } }] }),
          chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } }),
          'data: [DONE]\n\n',
        ],
      },
      {
        headers: { 'content-type': 'text/event-stream' },
        chunks: [
          chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 't' } }] }),
          chunk({ choices: [{ index: 0, delta: { content: 'wo' } }] }),
          chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 12, completion_tokens: 1, total_tokens: 13 } }),
          'data: [DONE]\n\n',
        ],
      },
    );
    const result = await worker().client.run('ai-sdk-yaml', 'one plus one');
    expect(result).toMatchObject({ text: 'two', finishReason: 'stop', usage: { inputTokens: 19, outputTokens: 4 } });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0]).toMatchObject({
      path: '/v1/chat/completions',
      headers: { authorization: 'Bearer sk-local' },
      body: { model: 'llama-3', stream: true, tools: [{ type: 'function', function: { name: 'add' } }] },
    });
    expect((server.requests[1]!.body as { messages: unknown[] }).messages.slice(-2)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":1}' } }] },
      { role: 'tool', tool_call_id: 'call_9', content: '{"sum":2}' },
    ]);
  });

  it('says what is wrong with an ai-sdk model entry: a package not installed, an export that does not exist', async () => {
    const entry = { name: 'x/y', provider: 'ai-sdk', options: {} };
    await expect(
      loadRegistry(parseConfig({ models: [{ ...entry, package: '@ai-sdk/not-installed', factory: 'create' }] }, { baseDir: ROOT, env: {} })),
    ).rejects.toThrow(/^models\[0\]: package: cannot load "@ai-sdk\/not-installed" from .* \(install it there: npm install @ai-sdk\/not-installed\)/);
    await expect(
      loadRegistry(parseConfig({ models: [{ ...entry, package: '@ai-sdk/openai-compatible', factory: 'createOpenAI' }] }, { baseDir: ROOT, env: {} })),
    ).rejects.toThrow('models[0]: factory: "@ai-sdk/openai-compatible" has no export "createOpenAI"; its exports: ');
    expect(() => parseConfig({ models: [{ ...entry, package: '@ai-sdk/openai-compatible' }] }, { baseDir: ROOT, env: {} })).toThrow(
      'give exactly one of factory',
    );
  });
});

describe.concurrent('the demo on an AI SDK provider, by config', () => {
  const keep = killAfterEach(afterEach);
  it('runs trip-planner on the model KEEL_DEMO_MODEL names, declared in temporal.yaml', async () => {
    const server = await startFakeHttpServer();
    try {
      server.answer({
        body: {
          id: 'p',
          object: 'chat.completion',
          created: 0,
          model: 'llama',
          choices: [{ index: 0, message: { role: 'assistant', content: 'Porto, by train.' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 40, completion_tokens: 4 },
        },
      });
      const { configPath, dir } = writeTestConfig('ai-sdk-demo', {
        modules: [join(ROOT, 'examples', 'agents.ts')],
        models: [
          {
            name: 'local/llama',
            provider: 'ai-sdk',
            package: '@ai-sdk/openai-compatible',
            factory: 'createOpenAICompatible',
            options: { name: 'local', baseURL: `${server.url}/v1` },
            // This server answers with whole JSON bodies: the entry asks for doGenerate.
            stream: false,
          },
        ],
      });
      // The project has the provider package installed (keel's own node_modules, linked).
      symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
      const env = { KEEL_DEMO_MODEL: 'local/llama', OPENAI_API_KEY: '', OPENAI_BASE_URL: '' };
      const worker = keep(spawnKeel(['worker', '--config', configPath], { env }));
      await worker.waitFor(/keel: worker \d+ on task queue/);
      const run = await runKeel(['run', 'trip-planner', 'Lisbon or Porto?', '--json', '--config', configPath], { env });
      expect(JSON.parse(run.stdout)).toMatchObject({ status: 'completed', text: 'Porto, by train.' });
      // stream: false in the entry: one whole answer asked for (doGenerate sends no stream field).
      expect(server.requests[0]!.body).not.toHaveProperty('stream');
      expect(server.requests[0]).toMatchObject({
        path: '/v1/chat/completions',
        body: {
          model: 'llama',
          messages: [
            { role: 'system', content: expect.stringContaining('You plan day trips') },
            { role: 'user', content: 'Lisbon or Porto?' },
          ],
        },
      });
    } finally {
      await server.close();
    }
  });
});

// The run that streams to a client (400 ms between pieces) runs with nothing beside it; the two calls before it, side by side.
describe('aiSdkModel streaming (doStream, the default)', () => {
  const parts = (delayMs = 0) =>
    simulateReadableStream({
      chunkDelayInMs: delayMs,
      chunks: [
        { type: 'stream-start' as const, warnings: [] },
        { type: 'text-start' as const, id: 't1' },
        { type: 'text-delta' as const, id: 't1', delta: 'Porto ' },
        { type: 'text-delta' as const, id: 't1', delta: 'is ' },
        { type: 'text-delta' as const, id: 't1', delta: 'lovely' },
        { type: 'text-end' as const, id: 't1' },
        { type: 'tool-input-start' as const, id: 'c1', toolName: 'add' },
        { type: 'tool-input-delta' as const, id: 'c1', delta: '{"a":1,"b":2}' },
        { type: 'tool-input-end' as const, id: 'c1' },
        { type: 'tool-call' as const, toolCallId: 'c1', toolName: 'add', input: '{"a":1,"b":2}' },
        { type: 'finish' as const, finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' }, usage: usage(7, 3) },
      ],
    });
  const generated = {
    content: [
      { type: 'text' as const, text: 'Porto is lovely' },
      { type: 'tool-call' as const, toolCallId: 'c1', toolName: 'add', input: '{"a":1,"b":2}' },
    ],
    finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' },
    usage: usage(7, 3),
    warnings: [],
  };

  it.concurrent('hands the text on delta by delta and answers what doGenerate would, tool calls and usage included', async () => {
    const mock = new MockLanguageModelV3({ doStream: async () => ({ stream: parts() }), doGenerate: async () => generated });
    const deltas: string[] = [];
    const streamed = await aiSdkModel({ name: 'mock/streamed', model: mock }).generate(request, {
      ...context,
      stream: (delta) => deltas.push(delta),
    });
    const whole = await aiSdkModel({ name: 'mock/streamed', model: mock, stream: false }).generate(request, context);
    expect(deltas).toEqual(['Porto ', 'is ', 'lovely']);
    expect(streamed).toEqual(whole);
    expect(streamed.message.content).toEqual([{ text: 'Porto is lovely' }, { toolRequest: { name: 'add', ref: 'c1', input: { a: 1, b: 2 } } }]);
    expect(mock.doStreamCalls).toHaveLength(1);
    expect(mock.doStreamCalls[0]!.prompt).toEqual(mock.doGenerateCalls[0]!.prompt);
  });

  it.concurrent('fails the call on an error part, as the provider error it carries', async () => {
    const mock = new MockLanguageModelV3({
      doStream: async () => ({ stream: simulateReadableStream({ chunks: [{ type: 'error' as const, error: new Error('stream broke') }] }) }),
    });
    await expect(aiSdkModel({ name: 'mock/broken', model: mock }).generate(request, context)).rejects.toThrow('stream broke');
  });

  it('shows the text to a client while the model writes it, in more than one piece', async () => {
    const done = { ...generated, content: [{ type: 'text' as const, text: 'Porto is lovely' }], finishReason: { unified: 'stop' as const, raw: 'stop' } };
    const chunks = [
      { type: 'text-start' as const, id: 't1' },
      ...['Porto ', 'is ', 'lovely'].map((delta) => ({ type: 'text-delta' as const, id: 't1', delta })),
      { type: 'text-end' as const, id: 't1' },
      { type: 'finish' as const, finishReason: done.finishReason, usage: usage(7, 3) },
    ];
    const mock = new MockLanguageModelV3({ doStream: async () => ({ stream: simulateReadableStream({ chunks, chunkDelayInMs: 400 }) }) });
    const model = aiSdkModel({ name: 'mock/streamed-run', model: mock });
    const worker = await startTestWorker(new Registry().add(model, defineAgent({ name: 'ai-sdk-streamed-run', model: model.name })), {
      worker: { maxHeartbeatThrottleInterval: '100 milliseconds' },
    });
    try {
      const handle = await worker.client.start('ai-sdk-streamed-run', 'where?');
      const texts: Array<{ delta: string; final: boolean }> = [];
      for await (const event of handle.events({ intervalMs: 50 })) if (event.type === 'text') texts.push({ delta: event.delta, final: event.final });
      expect(texts.filter((text) => !text.final).length).toBeGreaterThan(1);
      expect(texts.map((text) => text.delta).join('')).toBe('Porto is lovely');
      expect((await handle.result()).text).toBe('Porto is lovely');
    } finally {
      await worker.stop();
    }
  });
});
