/**
 * Metrics of a worker process: the SDK runtime's metrics (workflow and activity task latencies,
 * slots, pollers, ...) and keel's own (src/core/workflow-metrics.ts, src/activities/metrics.ts),
 * recorded by the SDK's runtime: on a Prometheus endpoint (`metrics.prometheus` in temporal.yaml,
 * `host:port`, scraped at /metrics; the runtime records into a buffer that keel serves,
 * prometheus.ts), or else over OTLP/HTTP when the standard OTEL_* variables ask for it
 * (`OTEL_METRICS_EXPORTER=otlp`, or unset with an OTLP endpoint), as traces do. Node side.
 */
import { MetricsBuffer, type MetricsExporterConfig } from '@temporalio/worker';
import { ConfigError } from '../config/load';
import type { KeelConfig } from '../config/schema';
import { BUFFER_SIZE } from './prometheus';

/** `OTEL_EXPORTER_OTLP_HEADERS`-style `k=v,k2=v2` as a record. */
function headersOf(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at > 0) headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return headers;
}

/** The OTLP/HTTP metrics endpoint the environment names, when it asks for OTLP metrics. */
export function otlpMetricsEndpoint(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const asked = env.OTEL_METRICS_EXPORTER?.split(',')[0]?.trim().toLowerCase();
  if (asked && asked !== 'otlp') return undefined;
  const explicit = env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT;
  if (explicit) return explicit;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (base) return `${base.replace(/\/+$/, '')}/v1/metrics`;
  return asked === 'otlp' ? 'http://localhost:4318/v1/metrics' : undefined;
}

/**
 * The runtime's metrics exporter for the config and environment; undefined: no metrics. For
 * `metrics.prometheus` it is a buffer, which `servePrometheus` serves on that address.
 */
export function metricsExporter(config: Pick<KeelConfig, 'metrics'>, env: NodeJS.ProcessEnv = process.env): MetricsExporterConfig | undefined {
  // keel's metrics keep their own names (keel_*); the SDK's get the usual temporal_ prefix from the runtime's default.
  const prometheus = config.metrics.prometheus;
  if (prometheus) {
    if (!/^(\[[0-9a-fA-F:]+\]|[^:\s]+):\d{1,5}$/.test(prometheus))
      throw new ConfigError(`metrics.prometheus: "${prometheus}" is not host:port (e.g. 127.0.0.1:9464)`);
    return { buffer: new MetricsBuffer({ maxBufferSize: BUFFER_SIZE, useSecondsForDurations: true }) };
  }
  const url = otlpMetricsEndpoint(env);
  if (!url) return undefined;
  const interval = Number(env.OTEL_METRIC_EXPORT_INTERVAL);
  return {
    otel: {
      url,
      http: true,
      headers: { ...headersOf(env.OTEL_EXPORTER_OTLP_HEADERS), ...headersOf(env.OTEL_EXPORTER_OTLP_METRICS_HEADERS) },
      ...(Number.isFinite(interval) && interval > 0 ? { metricsExportInterval: interval } : {}),
      useSecondsForDurations: true,
    },
  };
}
