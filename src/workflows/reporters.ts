/**
 * Who may report holds to a run. A run shows the holds its sub-agent runs report (the
 * `childInterrupts` signal) and forwards decisions for them; Temporal does not say who sent a
 * signal, so a run keeps its own record of the runs it started, under the key it shows their
 * holds by (`<agent>-<n>`), and accepts a report only from the run recorded under that key. A
 * report naming any other run (a forged one, sent to make a decision here approve a hold in an
 * unrelated run) is refused. Entries stay after their run settled (a last report may arrive
 * after the run's end is seen); one is a few dozen bytes. Runs in the workflow: deterministic, no I/O.
 */
import type { ReportSource } from '../features/feature';
import type { RunState } from './run-state';

/** Prefix of an entry that accepts any run of a session (a session run's id is known only once it started). */
const SESSION_PREFIX = 'session-runs:';

/** Records that `source` may report holds to `run` under `key`. */
export function expectReports(run: RunState, key: string, source: ReportSource): void {
  run.reporters = { ...run.reporters, [key]: 'runId' in source ? source.runId : `${SESSION_PREFIX}${source.sessionWorkflowId}` };
}

/** True when `runId` may report to `run` under `key`. */
export function acceptsReport(run: RunState, key: string, runId: string): boolean {
  const expected = run.reporters[key];
  if (expected === undefined) return false;
  if (!expected.startsWith(SESSION_PREFIX)) return expected === runId;
  const session = expected.slice(SESSION_PREFIX.length);
  return runId.startsWith(`${session}/run-`) && /^\d+$/.test(runId.slice(session.length + '/run-'.length));
}
