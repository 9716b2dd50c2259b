/**
 * OpenTelemetry traces, set up from the standard `OTEL_*` environment variables: a run is one
 * trace across the client that starts it, its workflow and its activities (Temporal's own
 * interceptors, `@temporalio/interceptors-opentelemetry`), with keel's spans in it
 * (`keel.run <agent>`, `keel.model <model>`, `keel.tool <tool>`, see spans.ts).
 *
 * On when `OTEL_TRACES_EXPORTER` is `otlp` or `console`, or when it is unset and an OTLP
 * endpoint is (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); off with
 * `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. The OTLP exporter (HTTP, JSON)
 * reads its endpoint and headers from the environment itself; the service name comes from
 * `OTEL_SERVICE_NAME` (default `keel`) and `OTEL_RESOURCE_ATTRIBUTES`. The SDK packages are
 * optional peers of keel, loaded only then. Node side.
 */
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import { ConfigError } from '../config/load';
import { missingPackage, requireModule, resolveModule } from '../node/require-ts';

/** The packages tracing needs; installed by the projects that trace. */
export const TRACING_PACKAGES = [
  '@temporalio/interceptors-opentelemetry',
  '@opentelemetry/sdk-trace-node',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/resources',
  '@opentelemetry/exporter-trace-otlp-http',
];

/** The install line for tracing's packages (OpenTelemetry SDK 1.x or 2.x both work; this installs the current ones). */
export const TRACING_INSTALL = `npm install ${TRACING_PACKAGES.join(' ')}`;

/** The error for a tracing package that is not installed while OTEL_* variables turn tracing on. */
export function missingTracingPackage(error: unknown, name: string): Error {
  const missing = missingPackage(error, TRACING_PACKAGES) ?? missingPackage(error, [name]);
  if (!missing) return error as Error;
  return new ConfigError(`tracing needs ${missing} (OTEL_* variables turn tracing on); install: ${TRACING_INSTALL}`);
}

/** What a process that traces adds to its Temporal client and worker. */
export interface Tracing {
  /** The exporter in use, as the environment chose it. */
  exporter: 'otlp' | 'console';
  /** For the client: spans for starting runs, queries, updates, signals. */
  clientInterceptors: WorkflowClientInterceptor[];
  /** For the worker: activity spans, and the sink that exports the workflow's spans. */
  activityInterceptors: ActivityInterceptorsFactory[];
  sinks: InjectedSinks<Record<string, never>>;
  /** The module bundled with the workflow for its spans. */
  workflowInterceptorModule: string;
  /** Exports what is buffered and stops (call before the process exits). */
  shutdown: () => Promise<void>;
}

/** Which exporter the environment asks for, if any. */
export function tracesExporterFromEnv(env: NodeJS.ProcessEnv = process.env): 'otlp' | 'console' | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const asked = env.OTEL_TRACES_EXPORTER?.split(',')[0]?.trim().toLowerCase();
  if (asked === 'otlp' || asked === 'console') return asked;
  if (asked) return undefined; // none, or one keel does not ship
  return env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ? 'otlp' : undefined;
}

function load<T>(name: string): T {
  try {
    return requireModule<T>(name, __filename);
  } catch (error) {
    throw missingTracingPackage(error, name);
  }
}

/** `@opentelemetry/resources` 1.x (`Resource`, `envDetectorSync`) or 2.x (`resourceFromAttributes`, sync `envDetector`). */
interface ResourcesModule {
  Resource?: new (attributes: Record<string, string>) => OtelResource;
  resourceFromAttributes?: (attributes: Record<string, string>) => OtelResource;
  envDetectorSync?: { detect: () => OtelResource };
  envDetector: { detect: () => unknown };
  detectResources?: (config: { detectors: unknown[] }) => OtelResource;
}
interface OtelResource {
  merge: (other: OtelResource | null) => OtelResource;
}

/** keel's default resource merged with what OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say (they win). */
export function resourceFromEnv(resources: ResourcesModule): OtelResource {
  const defaults = { 'service.name': 'keel' };
  if (resources.resourceFromAttributes && resources.detectResources) {
    return resources.resourceFromAttributes(defaults).merge(resources.detectResources({ detectors: [resources.envDetector] }));
  }
  if (resources.Resource && resources.envDetectorSync) return new resources.Resource(defaults).merge(resources.envDetectorSync.detect());
  throw new ConfigError('tracing: @opentelemetry/resources has neither resourceFromAttributes (2.x) nor Resource (1.x)');
}

/**
 * The workflow's spans are built by Temporal's interceptor with OpenTelemetry 1.x field names
 * (`instrumentationLibrary`, `parentSpanId`); an SDK 2.x processor and exporter read
 * `instrumentationScope` and `parentSpanContext`. Both are given, so either major version exports them.
 */
export function withSpanFieldsOfBothVersions<Span extends Record<string, unknown> & { spanContext: () => { traceId: string } }>(span: Span): Span {
  const library = span.instrumentationLibrary;
  if (span.instrumentationScope === undefined && library !== undefined) Object.assign(span, { instrumentationScope: library });
  if (span.instrumentationLibrary === undefined && span.instrumentationScope !== undefined)
    Object.assign(span, { instrumentationLibrary: span.instrumentationScope });
  const parentSpanId = span.parentSpanId;
  if (span.parentSpanContext === undefined && typeof parentSpanId === 'string' && parentSpanId) {
    Object.assign(span, { parentSpanContext: { traceId: span.spanContext().traceId, spanId: parentSpanId, traceFlags: 1, isRemote: false } });
  }
  return span;
}

let current: Tracing | undefined | null = null;

/** The tracing set up in this process, if any (without setting it up). */
export function activeTracing(): Tracing | undefined {
  return current ?? undefined;
}

/** The process's tracing (set up once, on the first call), or undefined when the environment leaves it off. */
export function tracingFromEnv(env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  if (current !== null) return current;
  const exporter = tracesExporterFromEnv(env);
  if (!exporter) return (current = undefined);
  const otel = load<typeof import('@temporalio/interceptors-opentelemetry')>('@temporalio/interceptors-opentelemetry');
  const { NodeTracerProvider } = load<typeof import('@opentelemetry/sdk-trace-node')>('@opentelemetry/sdk-trace-node');
  const { BatchSpanProcessor, SimpleSpanProcessor, ConsoleSpanExporter } =
    load<typeof import('@opentelemetry/sdk-trace-base')>('@opentelemetry/sdk-trace-base');
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over keel's default name.
  const resource = resourceFromEnv(load<ResourcesModule>('@opentelemetry/resources'));
  const processor =
    exporter === 'console'
      ? new SimpleSpanProcessor(new ConsoleSpanExporter())
      : new BatchSpanProcessor(
          new (load<typeof import('@opentelemetry/exporter-trace-otlp-http')>('@opentelemetry/exporter-trace-otlp-http').OTLPTraceExporter)(),
        );
  // `spanProcessors` in the constructor: 1.30 and 2.x both take it (2.x dropped addSpanProcessor).
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] } as unknown as ConstructorParameters<typeof NodeTracerProvider>[0]);
  const workflowProcessor = {
    onEnd: (span: Parameters<typeof processor.onEnd>[0]) => processor.onEnd(withSpanFieldsOfBothVersions(span as never)),
  } as unknown as typeof processor;
  provider.register();
  current = {
    exporter,
    clientInterceptors: [new otel.OpenTelemetryWorkflowClientInterceptor()],
    activityInterceptors: [
      (context) => ({
        inbound: new otel.OpenTelemetryActivityInboundInterceptor(context),
        outbound: new otel.OpenTelemetryActivityOutboundInterceptor(context),
      }),
    ],
    sinks: { exporter: otel.makeWorkflowExporter(workflowProcessor, resource as never) } as unknown as InjectedSinks<Record<string, never>>,
    workflowInterceptorModule: resolveModule('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors', __filename),
    shutdown: () => provider.shutdown(),
  };
  return current;
}
