/**
 * The decisions a run took, oldest first: the latest KEPT_DECISIONS, shown in its status and
 * carried across continue-as-new. Runs in the workflow: deterministic, no I/O.
 */
import { KEPT_DECISIONS, type DecisionRecord } from '../core/holds';
import type { RunState } from './run-state';

/** The run's decision records. */
export class DecisionLog {
  private readonly records: DecisionRecord[] = [];

  constructor(private readonly run: RunState) {}

  /** Keeps decision records (also those a resume took); the run's status shows them. */
  add(records: DecisionRecord[]): void {
    this.records.push(...records);
    if (this.records.length > KEPT_DECISIONS) this.records.splice(0, this.records.length - KEPT_DECISIONS);
    this.run.status.decisions = [...this.records];
  }

  /** Decisions taken before this run of the chain (continue-as-new): kept on, and shown with the new ones. */
  restore(records: readonly DecisionRecord[]): void {
    this.records.splice(0, this.records.length, ...records.slice(-KEPT_DECISIONS));
  }

  /** The latest decision taken on hold `interruptId`. */
  latest(interruptId: string): DecisionRecord | undefined {
    return [...this.records].reverse().find((taken) => taken.interruptId === interruptId);
  }
}
