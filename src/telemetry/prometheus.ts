/**
 * A worker's Prometheus endpoint (`metrics.prometheus`), served by keel rather than by the SDK:
 * the runtime records every metric, its own and keel's, into the SDK's metrics buffer; this
 * module drains it, keeps the totals (counters, gauges, histograms) and renders them in
 * Prometheus' text format on `GET /metrics`, behind keel's one HTTP guard
 * (src/node/http-guard.ts). The SDK's own exporter would be a second listener that answers any
 * Host (a page rebound to 127.0.0.1 reads it); this way the endpoint keeps every guarantee of
 * keel's servers and none of the SDK's is left. Node side.
 */
import type { Metric, MetricKind, MetricTags } from '@temporalio/common';
import type { BufferedMetricUpdate, MetricsBuffer } from '@temporalio/worker';
import { Hono } from 'hono';
import { startGuardedServer, type GuardedServer } from '../node/http-guard';
import { UNKNOWN_LABEL } from '../core/workflow-metrics';

/** How often the buffer is drained between scrapes (it holds `BUFFER_SIZE` updates; more are dropped). */
const DRAIN_EVERY_MS = 500;
/** Updates the SDK's buffer holds between drains. */
export const BUFFER_SIZE = 50_000;

/** Histogram bounds in milliseconds, by metric: the SDK's for its own (sdk-core's defaults), the nearest of those for keel's. */
const BOUNDS_MS: Record<string, number[]> = {
  workflow_endtoend_latency: [100, 500, 1000, 1500, 2000, 5000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000, 30_600_000, 8.64e7],
  workflow_task_execution_latency: [1, 10, 20, 50, 100, 200, 500, 1000],
  workflow_task_replay_latency: [1, 10, 20, 50, 100, 200, 500, 1000],
  activity_execution_latency: [50, 100, 500, 1000, 5000, 10_000, 60_000],
  workflow_task_schedule_to_start_latency: [100, 500, 1000, 5000, 10_000, 100_000, 1_000_000],
  activity_schedule_to_start_latency: [100, 500, 1000, 5000, 10_000, 100_000, 1_000_000],
};
BOUNDS_MS.keel_model_call_latency = BOUNDS_MS.activity_execution_latency!;
BOUNDS_MS.keel_tool_call_latency = BOUNDS_MS.activity_execution_latency!;
BOUNDS_MS.keel_hold_wait = BOUNDS_MS.workflow_endtoend_latency!;
const DEFAULT_BOUNDS_MS = [50, 100, 500, 1000, 2500, 10_000];

/** A histogram's upper bounds, in its own unit (seconds for the SDK's durations). */
function boundsOf(name: string, unit: string | undefined): number[] {
  const bounds = BOUNDS_MS[name.replace(/^temporal_/, '')] ?? DEFAULT_BOUNDS_MS;
  return unit === 's' ? bounds.map((bound) => bound / 1000) : bounds;
}

type Series = { labels: string; value: number; buckets?: number[]; sum?: number };
type Family = { name: string; kind: MetricKind; help: string; bounds: number[]; series: Map<string, Series> };

const metricName = (name: string) => name.replace(/[^a-zA-Z0-9_:]/g, '_').replace(/^(?=[0-9])/, '_');
const labelName = (name: string) => name.replace(/[^a-zA-Z0-9_]/g, '_').replace(/^(?=[0-9])/, '_');
const labelValue = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const numberText = (value: number) => (Number.isNaN(value) ? 'NaN' : value === Infinity ? '+Inf' : value === -Infinity ? '-Inf' : String(value));

/** The totals of every metric the buffer has given, rendered on demand. */
export class PrometheusTotals {
  /**
   * @param known - for a label, the values it may take; any other is shown as `(unknown)`. (The
   * SDK's `workflow_type` is the type a caller started, whether or not the worker has it.)
   */
  constructor(private readonly known: Readonly<Record<string, ReadonlySet<string>>> = {}) {}

  private readonly families = new Map<string, Family>();
  // The SDK gives the same objects for the same metric and the same tags again: the work of naming them is done once.
  private readonly familyOf = new WeakMap<Metric, Family>();
  private readonly labelsOf = new WeakMap<MetricTags, string>();

  /** Adds buffered updates to the totals. */
  add(updates: Iterable<BufferedMetricUpdate>): void {
    for (const { metric, value, attributes } of updates) {
      const family = this.family(metric);
      const labels = this.labels(attributes);
      let series = family.series.get(labels);
      if (!series) {
        series = { labels, value: 0, ...(family.kind === 'histogram' ? { buckets: family.bounds.map(() => 0), sum: 0 } : {}) };
        family.series.set(labels, series);
      }
      if (family.kind === 'gauge') series.value = value;
      else if (family.kind === 'histogram') {
        series.value += 1;
        series.sum! += value;
        const at = family.bounds.findIndex((bound) => value <= bound);
        if (at >= 0) series.buckets![at]! += 1;
      } else series.value += value;
    }
  }

  /** Everything, in Prometheus' text format (version 0.0.4). */
  render(): string {
    const lines: string[] = [];
    for (const family of [...this.families.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      const type = family.kind === 'up-down-counter' ? 'gauge' : family.kind;
      lines.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${type}`);
      for (const series of family.series.values()) {
        const braces = (extra = '') => {
          const all = [series.labels, extra].filter(Boolean).join(',');
          return all ? `{${all}}` : '';
        };
        if (family.kind !== 'histogram') {
          lines.push(`${family.name}${braces()} ${numberText(series.value)}`);
          continue;
        }
        let cumulative = 0;
        family.bounds.forEach((bound, index) => {
          cumulative += series.buckets![index]!;
          lines.push(`${family.name}_bucket${braces(`le="${numberText(bound)}"`)} ${cumulative}`);
        });
        lines.push(`${family.name}_bucket${braces('le="+Inf"')} ${series.value}`);
        lines.push(`${family.name}_sum${braces()} ${numberText(series.sum!)}`, `${family.name}_count${braces()} ${series.value}`);
      }
    }
    return lines.length ? `${lines.join('\n')}\n` : '';
  }

  private family(metric: Metric): Family {
    let family = this.familyOf.get(metric);
    if (family) return family;
    // Counters end in _total, as the SDK's exporter writes them (countersTotalSuffix).
    const base = metricName(metric.name);
    const name = metric.kind === 'counter' && !base.endsWith('_total') ? `${base}_total` : base;
    family = this.families.get(name);
    if (!family) {
      const help = (metric.description || metric.name).replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
      family = { name, kind: metric.kind, help, bounds: metric.kind === 'histogram' ? boundsOf(metric.name, metric.unit) : [], series: new Map() };
      this.families.set(name, family);
    }
    this.familyOf.set(metric, family);
    return family;
  }

  private labels(attributes: MetricTags): string {
    let labels = this.labelsOf.get(attributes);
    if (labels !== undefined) return labels;
    labels = Object.keys(attributes)
      .sort()
      .map((key) => {
        const value = String(attributes[key]);
        return `${labelName(key)}="${labelValue(this.known[key] && !this.known[key].has(value) ? UNKNOWN_LABEL : value)}"`;
      })
      .join(',');
    this.labelsOf.set(attributes, labels);
    return labels;
  }
}

/** Options of `servePrometheus`. */
export interface PrometheusOptions {
  /** The `host:port` of `metrics.prometheus`. */
  address: string;
  /** The buffer the runtime records into (installed with it after this resolves). */
  buffer: MetricsBuffer;
  /** Required off loopback (default: $KEEL_METRICS_TOKEN); Prometheus sends it as `authorization: Bearer`. */
  token?: string | undefined;
  /** For a label, the values it may take (the worker's workflow types); any other is shown as `(unknown)`. */
  known?: Readonly<Record<string, ReadonlySet<string>>>;
}

/**
 * Serves `GET /metrics` on `address` behind keel's HTTP guard, draining `buffer` meanwhile.
 * Neither the server nor its drain keeps the process alive.
 */
export async function servePrometheus({
  address,
  buffer,
  token = process.env.KEEL_METRICS_TOKEN || undefined,
  known = {},
}: PrometheusOptions): Promise<GuardedServer> {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  const totals = new PrometheusTotals(known);
  const drain = () => totals.add(buffer.retrieveUpdates());
  const app = new Hono();
  app.get('/metrics', (c) => {
    drain();
    return c.body(totals.render(), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
  });
  const server = await startGuardedServer({
    name: 'keel metrics',
    host,
    port: Number(address.slice(at + 1)),
    app,
    token,
    tokenVariable: 'KEEL_METRICS_TOKEN',
    // A scrape sends no body.
    maxBodyBytes: 0,
    unref: true,
  });
  const timer = setInterval(drain, DRAIN_EVERY_MS);
  timer.unref();
  return {
    ...server,
    close: () => {
      clearInterval(timer);
      return server.close();
    },
  };
}
