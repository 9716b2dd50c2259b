/** The text a scrape reads: totals of buffered updates, in Prometheus' format. */
import type { Metric, MetricTags } from '@temporalio/common';
import type { BufferedMetricUpdate } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { PrometheusTotals } from './prometheus';

const metric = (name: string, kind: Metric['kind'], unit?: string, description = `${name} help`): Metric => ({
  name,
  kind,
  valueType: 'int',
  ...(unit !== undefined ? { unit } : {}),
  description,
});
const update = (of: Metric, value: number, attributes: MetricTags = {}): BufferedMetricUpdate => ({ metric: of, value, attributes });

describe('PrometheusTotals', () => {
  it('adds counter deltas, keeps a gauge’s last value, and sums an up-down counter', () => {
    const totals = new PrometheusTotals();
    const runs = metric('keel_runs_ended', 'counter');
    const slots = metric('temporal_worker_task_slots_available', 'gauge');
    const pending = metric('keel_pending', 'up-down-counter');
    totals.add([
      update(runs, 1, { outcome: 'completed', agent: 'a' }),
      update(runs, 2, { agent: 'a', outcome: 'completed' }),
      update(slots, 100),
      update(slots, 97),
      update(pending, 3),
      update(pending, -1),
    ]);
    expect(totals.render()).toBe(
      [
        '# HELP keel_pending keel_pending help',
        '# TYPE keel_pending gauge',
        'keel_pending 2',
        '# HELP keel_runs_ended_total keel_runs_ended help',
        '# TYPE keel_runs_ended_total counter',
        'keel_runs_ended_total{agent="a",outcome="completed"} 3',
        '# HELP temporal_worker_task_slots_available temporal_worker_task_slots_available help',
        '# TYPE temporal_worker_task_slots_available gauge',
        'temporal_worker_task_slots_available 97',
        '',
      ].join('\n'),
    );
  });

  it('buckets a histogram cumulatively, in seconds for the SDK’s durations and milliseconds for keel’s', () => {
    const totals = new PrometheusTotals();
    totals.add([
      update(metric('temporal_activity_execution_latency', 'histogram', 's'), 0.07),
      update(metric('temporal_activity_execution_latency', 'histogram', 's'), 120),
      update(metric('keel_tool_call_latency', 'histogram', 'ms'), 70, { tool: 't' }),
    ]);
    const text = totals.render();
    expect(text).toContain('temporal_activity_execution_latency_bucket{le="0.05"} 0\ntemporal_activity_execution_latency_bucket{le="0.1"} 1\n');
    expect(text).toContain('temporal_activity_execution_latency_bucket{le="60"} 1\ntemporal_activity_execution_latency_bucket{le="+Inf"} 2\n');
    expect(text).toContain('temporal_activity_execution_latency_sum 120.07\ntemporal_activity_execution_latency_count 2\n');
    expect(text).toContain('keel_tool_call_latency_bucket{tool="t",le="100"} 1\n');
    expect(text).toContain('keel_tool_call_latency_count{tool="t"} 1\n');
  });

  it('shows a label value the worker did not register as (unknown)', () => {
    const totals = new PrometheusTotals({ workflow_type: new Set(['generateWorkflow']) });
    const failed = metric('temporal_workflow_task_execution_failed', 'counter');
    totals.add([update(failed, 1, { workflow_type: 'generateWorkflow' }), update(failed, 2, { workflow_type: 'Invented "type"' })]);
    const text = totals.render();
    expect(text).toContain('temporal_workflow_task_execution_failed_total{workflow_type="generateWorkflow"} 1\n');
    expect(text).toContain('temporal_workflow_task_execution_failed_total{workflow_type="(unknown)"} 2\n');
    expect(text).not.toContain('Invented');
  });

  it('escapes label values and help, and makes names Prometheus takes', () => {
    const totals = new PrometheusTotals();
    totals.add([update(metric('my.metric', 'counter', undefined, 'line one\nline \\ two'), 1, { 'odd-key': 'a "quoted"\nback\\slash' })]);
    expect(totals.render()).toBe(
      [
        '# HELP my_metric_total line one\\nline \\\\ two',
        '# TYPE my_metric_total counter',
        'my_metric_total{odd_key="a \\"quoted\\"\\nback\\\\slash"} 1',
        '',
      ].join('\n'),
    );
  });
});
