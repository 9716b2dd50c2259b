/**
 * keel's own metrics from workflow code, through the SDK's workflow `metricMeter` (recorded by
 * the worker's runtime, on its Prometheus endpoint or OTLP exporter; never during replay, so a
 * run replayed on another worker counts once). Metric names and tags are docs/metrics.md's.
 * Emitting a metric issues no command: adding or removing one never breaks replay. The meter
 * exists only in workflow context, so each metric is made when it is recorded, and nothing is
 * recorded outside one (a middleware run by the in-memory test harness). A label names only what
 * a worker registered (an agent it resolved): a run started for a name nobody registered is
 * counted under `(unknown)`, so no caller adds a series of its own text. Pure.
 */
import { inWorkflowContext, metricMeter } from '@temporalio/workflow';
import type { HoldEvent } from './hold-notices';

/** The label of a run whose agent no worker resolved (an invented name, an input that does not parse). */
export const UNKNOWN_LABEL = '(unknown)';

export function runStarted(agent: string): void {
  if (!inWorkflowContext()) return;
  metricMeter.createCounter('keel_runs_started', 'runs', 'Runs started (not counting the next runs of a chain), by agent.').add(1, { agent });
}

/** A run ended; `agent` is the name a worker resolved, undefined when none did. */
export function runEnded(agent: string | undefined, outcome: string): void {
  if (!inWorkflowContext()) return;
  metricMeter
    .createCounter('keel_runs_ended', 'runs', 'Runs ended, by agent and outcome (completed, interrupted, failed, cancelled).')
    .add(1, { agent: agent ?? UNKNOWN_LABEL, outcome });
}

export function runContinuedAsNew(agent: string): void {
  if (!inWorkflowContext()) return;
  metricMeter
    .createCounter('keel_runs_continued_as_new', 'runs', 'Runs that went on in a new run of their chain (continue-as-new), by agent.')
    .add(1, { agent });
}

/** The hold metrics (keel_holds_raised, keel_holds_decided, keel_hold_wait), as an observer of the hold board. */
export function holdMetrics({ type, at, hold }: HoldEvent): void {
  if (type === 'hold.raised') holdRaised(hold.kind);
  else if (type === 'hold.decided' || type === 'hold.expired')
    holdSettled(hold.kind, type === 'hold.decided' ? 'decided' : 'timed_out', Date.parse(at) - Date.parse(hold.since ?? at));
}

function holdRaised(kind: string): void {
  if (!inWorkflowContext()) return;
  metricMeter.createCounter('keel_holds_raised', 'holds', 'Holds raised (a call waiting for a decision), by kind.').add(1, { kind });
}

function holdSettled(kind: string, how: 'decided' | 'timed_out', waitedMs: number): void {
  if (!inWorkflowContext()) return;
  metricMeter.createCounter('keel_holds_decided', 'holds', 'Holds decided or timed out, by kind and how (decided, timed_out).').add(1, { kind, how });
  metricMeter.createHistogram('keel_hold_wait', 'int', 'ms', 'Time from a hold to its decision, by kind.').record(Math.max(0, Math.round(waitedMs)), { kind });
}

export function budgetStopped(): void {
  if (!inWorkflowContext()) return;
  metricMeter
    .createCounter('keel_budget_stops', 'runs', 'Runs a Budget stopped (tagged, as every workflow metric is, with its workflow type and task queue).')
    .add(1);
}
