/**
 * OpenTelemetry traces from the standard OTEL_* variables: a `keel worker` and a `keel run`
 * process export to a local OTLP/HTTP receiver the test starts, and one trace holds the run's
 * start, its workflow, its activities and keel's spans named after the agent, model and tool;
 * with the OpenTelemetry SDK 1.x and with 2.x (test/fixtures/otel2-layout.cjs gives keel the 2.x
 * packages, installed as otel2-* aliases). A missing tracing package is named by the worker and
 * the CLI, not taken for an unreachable server.
 */
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TRACING_INSTALL, tracesExporterFromEnv } from '../src/telemetry/tracing';
import { killAfterEach, ROOT, runKeel, spawnKeel, writeTestConfig } from './support/processes';

interface ReceivedSpan {
  name: string;
  traceId: string;
  service: string;
  attributes: Record<string, unknown>;
}

/** A value of OTLP/JSON's AnyValue. */
function valueOf(value: Record<string, unknown>): unknown {
  if ('stringValue' in value) return value.stringValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return value.doubleValue;
  if ('boolValue' in value) return value.boolValue;
  if ('arrayValue' in value) return ((value.arrayValue as { values?: Array<Record<string, unknown>> }).values ?? []).map(valueOf);
  return undefined;
}

type KeyValues = Array<{ key: string; value: Record<string, unknown> }>;
const attributesOf = (list: KeyValues | undefined) => Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));

let receiver: Server;
let endpoint: string;
const spans: ReceivedSpan[] = [];
/** OTLP/HTTP metrics exports (protobuf, from the SDK runtime's exporter). */
const metricsBodies: Buffer[] = [];

beforeAll(async () => {
  // OTLP/HTTP with JSON bodies, as @opentelemetry/exporter-trace-otlp-http sends them.
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.url === '/v1/metrics') metricsBodies.push(Buffer.concat(chunks));
      if (request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: Array<{
            resource: { attributes: KeyValues };
            scopeSpans: Array<{ spans: Array<{ name: string; traceId: string; attributes: KeyValues }> }>;
          }>;
        };
        for (const resourceSpans of body.resourceSpans) {
          const service = String(attributesOf(resourceSpans.resource.attributes)['service.name']);
          for (const scope of resourceSpans.scopeSpans)
            for (const span of scope.spans) spans.push({ name: span.name, traceId: span.traceId, service, attributes: attributesOf(span.attributes) });
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const address = receiver.address();
  endpoint = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(async () => {
  await new Promise((resolve) => receiver.close(resolve));
});

describe('tracing from the OTEL_* variables', () => {
  it('is on for an OTLP endpoint or exporter, off when disabled or none', () => {
    expect(tracesExporterFromEnv({})).toBeUndefined();
    expect(tracesExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x' })).toBe('otlp');
    expect(tracesExporterFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://x/v1/traces' })).toBe('otlp');
    expect(tracesExporterFromEnv({ OTEL_TRACES_EXPORTER: 'console' })).toBe('console');
    expect(tracesExporterFromEnv({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x' })).toBeUndefined();
    expect(tracesExporterFromEnv({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' })).toBeUndefined();
  });

  const keep = killAfterEach(afterEach);
  // The same with the OpenTelemetry SDK 2.x packages (a project that installed the current ones).
  const OTEL2 = { NODE_OPTIONS: `--require ${join(ROOT, 'test', 'fixtures', 'otel2-layout.cjs')}` };
  for (const [sdk, layout] of [
    ['1.x', {}],
    ['2.x', OTEL2],
  ] as const)
    it(`exports one trace per run, from the client's start through the workflow to the model and tool calls (SDK ${sdk})`, async () => {
      await exportsOneTrace(layout, sdk);
    });

  it('says which tracing package is missing, for the worker and the CLI alike, and runs nothing', async () => {
    const { configPath } = writeTestConfig('tracing-missing', { modules: [join(ROOT, 'examples', 'agents.ts')] });
    const env = {
      NODE_OPTIONS: `--require ${join(ROOT, 'test', 'fixtures', 'hide-package.cjs')}`,
      KEEL_TEST_HIDE_PACKAGE: '@opentelemetry/sdk-trace-node',
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    };
    const why = `tracing needs @opentelemetry/sdk-trace-node (OTEL_* variables turn tracing on); install: ${TRACING_INSTALL}`;
    for (const args of [['worker'], ['run', 'trip-planner', 'Lisbon?']]) {
      const { code, stdout, stderr } = await runKeel([...args, '--config', configPath], { env });
      expect(code, stderr).toBe(2);
      expect(stderr).toContain(why);
      expect(stderr).not.toMatch(/cannot reach Temporal/i);
      expect(stdout).toBe('');
    }
  });

  async function exportsOneTrace(layout: Record<string, string>, sdk: string): Promise<void> {
    const { configPath } = writeTestConfig('tracing', {
      modules: [join(ROOT, 'examples', 'agents.ts')],
      models: [
        {
          name: 'scripted/traced',
          script: [{ toolRequests: [{ name: 'lookup_weather', input: { city: 'Porto' } }], usage: { inputTokens: 12, outputTokens: 3 } }, { text: 'sunny' }],
        },
      ],
      agents: [{ name: 'traced', model: 'scripted/traced', tools: ['lookup_weather'] }],
    });
    const otel = {
      ...layout,
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_METRIC_EXPORT_INTERVAL: '300',
      OPENAI_API_KEY: '',
      OPENAI_BASE_URL: '',
    };
    const worker = keep(spawnKeel(['worker', '--config', configPath], { env: { ...otel, OTEL_SERVICE_NAME: 'keel-worker-test' } }));
    await worker.waitFor(/keel: worker \d+ on task queue/, 120_000);
    // The worker and the CLI loaded the SDK the test asked for.
    if (sdk === '2.x') expect(worker.output()).toMatch(/otel2-layout: @opentelemetry\/sdk-trace-node is 2\./);
    else expect(worker.output()).not.toContain('otel2-layout');
    const run = await runKeel(['run', 'traced', 'weather?', '--json', '--config', configPath], { env: { ...otel, OTEL_SERVICE_NAME: 'keel-cli-test' } });
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'completed', text: 'sunny' });
    if (sdk === '2.x') expect(run.stderr).toMatch(/otel2-layout: @opentelemetry\/resources is 2\./);
    const { runId } = JSON.parse(run.stdout) as { runId: string };

    const root = () => spans.find((span) => span.name === 'keel.run traced' && span.attributes['keel.run_id'] === runId);
    await expect.poll(() => root(), { timeout: 20_000 }).toBeDefined();
    const inTrace = () => spans.filter((span) => span.traceId === root()!.traceId);
    const expected = [
      'keel.run traced',
      'StartWorkflow:generateWorkflow',
      'RunWorkflow:generateWorkflow',
      'RunActivity:callModel',
      'keel.model scripted/traced',
      'RunActivity:callTool',
      'keel.tool lookup_weather',
    ];
    await expect.poll(() => expected.filter((name) => !inTrace().some((span) => span.name === name)), { timeout: 20_000 }).toEqual([]);

    // The same OTEL_* variables send the worker's metrics, keel's among them, over OTLP/HTTP.
    await expect
      .poll(() => metricsBodies.some((body) => body.includes('keel_model_calls') && body.includes('temporal_workflow_completed')), { timeout: 20_000 })
      .toBe(true);
    const spansOf = (name: string) => inTrace().filter((span) => span.name === name);
    expect(root()!.service).toBe('keel-cli-test');
    expect(spansOf('keel.tool lookup_weather')[0]).toMatchObject({
      service: 'keel-worker-test',
      attributes: { 'keel.run_id': runId, 'keel.tool': 'lookup_weather' },
    });
    // OTEL_TRACES_EXPORTER=console: the CLI's own spans on its stdout instead.
    const consoleRun = await runKeel(['run', 'traced', 'again?', '--config', configPath], {
      env: { ...layout, OTEL_TRACES_EXPORTER: 'console', OPENAI_API_KEY: '', OPENAI_BASE_URL: '' },
    });
    expect(consoleRun.code).toBe(0);
    expect(consoleRun.stdout).toContain("name: 'keel.run traced'");
    const [firstModelCall] = spansOf('keel.model scripted/traced');
    expect(firstModelCall).toMatchObject({
      service: 'keel-worker-test',
      attributes: {
        'keel.agent': 'traced',
        'keel.model': 'scripted/traced',
        'keel.turn': 1,
        'gen_ai.usage.input_tokens': 12,
        'gen_ai.usage.output_tokens': 3,
        'gen_ai.response.finish_reasons': ['stop'],
      },
    });
  }
});
