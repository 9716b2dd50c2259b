/**
 * keel's own metrics of model and tool calls, through the activity context's `metricMeter`
 * (the worker's runtime records them on its Prometheus endpoint or OTLP exporter, beside the
 * SDK's own; a no-op without metrics). Names and tags are docs/metrics.md's. A call is recorded
 * only once the worker found its model or tool, so a label is always a registered name. Node side.
 */
import type { MetricMeter } from '@temporalio/common';
import type { Usage } from '../core/usage';
import { KeelError } from '../core/errors';

/** What went wrong, as a tag: `ok`, or a keel status (UNAVAILABLE, ...; anything else is INTERNAL). */
export function outcomeOf(error: unknown): string {
  if (error === undefined) return 'ok';
  if (KeelError.isInstance(error)) return error.status;
  return 'INTERNAL';
}

/** The tokens `usage` counts, by the kind label the metrics give them (input, output, cached_input, thoughts); none of a kind with none. */
export function tokenKinds(usage: Usage): Array<[string, number]> {
  const kinds: Array<[string, number | undefined]> = [
    ['input', usage.inputTokens],
    ['output', usage.outputTokens],
    ['cached_input', usage.cachedContentTokens],
    ['thoughts', usage.thoughtsTokens],
  ];
  return kinds.flatMap(([kind, count]) => (count ? [[kind, Math.round(count)] as [string, number]] : []));
}

/** One model call: count, latency, tokens and cost (in millionths of a dollar, counters being whole numbers). */
export function recordModelCall(meter: MetricMeter, model: string, outcome: string, ms: number, usage: Usage | undefined): void {
  meter.createCounter('keel_model_calls', 'calls', 'Model calls (activity attempts), by model and outcome.').add(1, { model, outcome });
  meter.createHistogram('keel_model_call_latency', 'int', 'ms', 'Time of one model call, by model.').record(Math.round(ms), { model, outcome });
  if (!usage) return;
  const tokens = meter.createCounter('keel_model_tokens', 'tokens', 'Tokens of model calls, by model and kind (input, output, cached_input, thoughts).');
  for (const [kind, count] of tokenKinds(usage)) tokens.add(count, { model, kind });
  if (usage.cost)
    meter
      .createCounter('keel_model_cost_micro_usd', 'micro_usd', 'Cost of model calls in millionths of a US dollar, by model.')
      .add(Math.round(usage.cost * 1e6), { model });
}

/** One tool call: count and latency, by tool and outcome. */
export function recordToolCall(meter: MetricMeter, tool: string, outcome: string, ms: number): void {
  meter.createCounter('keel_tool_calls', 'calls', 'Tool calls (activity attempts), by tool and outcome.').add(1, { tool, outcome });
  meter.createHistogram('keel_tool_call_latency', 'int', 'ms', 'Time of one tool call, by tool.').record(Math.round(ms), { tool, outcome });
}
