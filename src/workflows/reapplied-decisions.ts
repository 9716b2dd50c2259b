/**
 * Decisions the server re-applies to a run made by `workflow reset` (docs/holds.md): it replays
 * the decisions sent after the reset point at the new run's first workflow task, before the run
 * has raised those holds again. Each waits here for its hold; raised again for the same call it
 * is decided as sent, raised for another call (the model answered differently) or never raised
 * before the run ends it is dropped, and says why in the run's status. Runs in the workflow.
 */
import { ApplicationFailure, condition, log, workflowInfo } from '@temporalio/workflow';
import { decisionWord, holdMismatch, type Decision } from '../core/holds';
import type { Hold, ReappliedDecision } from '../core/run';
import type { RunState } from './run-state';

/** The decisions re-applied to one run after a reset, until their holds are raised again. */
export class ReappliedDecisions {
  /** A run made by `workflow reset` keeps the original's first run id: only it is re-applied decisions. */
  readonly resetRun = workflowInfo().runId !== workflowInfo().originalExecutionRunId;
  private readonly kept = new Map<string, ReappliedDecision>();
  /** Set when the run ends: decisions still waiting for their hold are dropped. */
  private closed = false;

  constructor(
    private readonly run: RunState,
    /** How many holds the run has raised (its ids are i1, i2, …), and its pending hold of an id. */
    private readonly holds: { raised: () => number; pending: (interruptId: string) => Hold | undefined },
  ) {}

  /** An id of this run's own that it has not raised (again) yet, and no decision kept for it. */
  awaits(interruptId: string): boolean {
    const number = /^i(\d+)$/.exec(interruptId)?.[1];
    return !this.closed && number !== undefined && Number(number) > this.holds.raised() && !this.kept.has(interruptId);
  }

  /** Keeps `decision` until the run raises its hold again; throws why it is dropped when that hold is for another call or never comes. */
  async keep(decision: Decision): Promise<void> {
    const { interruptId } = decision;
    const kept: ReappliedDecision = { interruptId, decision: decisionWord(decision), state: 'waiting' };
    this.kept.set(interruptId, kept);
    this.report();
    log.warn('keeping a decision re-applied after a reset until its hold is raised again', { interruptId });
    await condition(() => this.holds.pending(interruptId) !== undefined || this.closed);
    const hold = this.holds.pending(interruptId);
    // Raised again, but for another call (the model answered differently this time): the hold waits for a person.
    const reason = hold ? holdMismatch(decision, hold) : `the run ended before it raised hold ${interruptId} again after the reset`;
    if (hold?.toolName) kept.toolName = hold.toolName;
    kept.state = reason ? 'dropped' : 'applied';
    if (reason) kept.reason = reason;
    this.report();
    if (reason) {
      log.warn('dropped a decision re-applied after a reset', { interruptId, reason });
      throw ApplicationFailure.create({ type: 'FAILED_PRECONDITION', nonRetryable: true, message: reason });
    }
  }

  /** The run is ending: decisions still waiting for their hold are dropped. */
  close(): void {
    this.closed = true;
  }

  private report(): void {
    this.run.status.reappliedDecisions = [...this.kept.values()].map((decision) => ({ ...decision }));
  }
}
