/**
 * The votes on one hold whose approver rule counts them (docs/auth.md): a quorum of distinct
 * verified people, an escalation after a while, the requester kept out, approvals from distinct
 * groups. The board (hold-board.ts) verifies each decider's proof first; this says whether the
 * verified decider may vote now, records the vote, and tells whether the votes decide the hold.
 * Runs in the workflow: deterministic, no I/O.
 */
import { durationMs } from '../core/duration';
import { approvalCount, approvalsCounted, mayDecide, mayStillVote, tally, type ApproverRule } from '../core/approvers';
import type { Decision, HoldVotes, Vote } from '../core/holds';

/** Whom a vote may not come from under `notRequester`: the run's owner and the turn's sender. */
export interface Requesters {
  owner?: string | undefined;
  sentBy?: string | undefined;
}

/** The votes on one hold, from its raising to its decision. */
export class HoldVotesBox {
  private readonly cast: Vote[] = [];
  private escalated = false;

  constructor(
    readonly rule: ApproverRule,
    private readonly requesters: Requesters,
    private readonly times: { raisedAt: number; timeoutMs?: number | undefined },
  ) {}

  /** How long after the raising it escalates, when its rule says (and before it would expire). */
  get escalateMs(): number | undefined {
    const ms = this.rule.escalateAfter !== undefined ? durationMs(this.rule.escalateAfter) : undefined;
    return ms !== undefined && (this.times.timeoutMs === undefined || ms < this.times.timeoutMs) ? ms : undefined;
  }

  /** Who may decide it now: its approvers, and once escalated whom it escalated to. */
  deciders(): string[] {
    return this.escalated ? [...this.rule.approvers, ...(this.rule.escalateTo ?? [])] : this.rule.approvers;
  }

  /** Puts the hold to `escalateTo` as well. */
  escalate(): void {
    this.escalated = true;
  }

  /** Why `decision` may not be counted (before its proof is checked, and again after), or undefined. */
  refusal(decision: Decision, holdId: string): { type: 'INVALID_ARGUMENT' | 'FAILED_PRECONDITION' | 'PERMISSION_DENIED'; message: string } | undefined {
    if (!('approved' in decision))
      return {
        type: 'INVALID_ARGUMENT',
        message: `hold ${holdId} is put to a vote (${approvalCount(this.rule.quorum)}): send { approved: true } or { approved: false }`,
      };
    const by = decision.decidedBy;
    if (by !== undefined && this.cast.some((vote) => vote.by === by))
      return { type: 'FAILED_PRECONDITION', message: `${by} has already voted on hold ${holdId}: each person votes once` };
    if (by !== undefined && this.rule.notRequester && (by === this.requesters.owner || by === this.requesters.sentBy))
      return { type: 'PERMISSION_DENIED', message: `hold ${holdId} may not be decided by who asked for it (${by}): another approver must vote` };
    return undefined;
  }

  /** Records a verified decider's vote; what the votes now decide (undefined: more votes are needed). */
  vote(decision: Extract<Decision, { approved: boolean }>, at: Date): 'approved' | 'denied' | undefined {
    const groups = [...(decision.decidedByGroups ?? [])].sort();
    const decider = { decidedBy: decision.decidedBy, groups };
    // A vote by one the hold escalated to, who is not among its approvers, decides alone.
    const escalation = this.escalated && !mayDecide(this.rule.approvers, decider);
    this.cast.push({
      by: decision.decidedBy ?? '',
      groups,
      approved: decision.approved,
      ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
      at: at.toISOString(),
      ...(escalation ? { escalated: true } : {}),
    });
    return tally(this.rule, this.cast);
  }

  /** The votes so far. */
  votes(): Vote[] {
    return this.cast.map((vote) => ({ ...vote, groups: [...vote.groups] }));
  }

  /** The votes as the hold's status shows them. */
  view(): HoldVotes {
    const { raisedAt, timeoutMs } = this.times;
    const escalateMs = this.escalateMs;
    return {
      quorum: this.rule.quorum,
      cast: this.votes(),
      mayVote: mayStillVote(this.rule, this.cast, this.escalated),
      approvals: approvalsCounted(this.rule, this.cast).count,
      ...(escalateMs !== undefined && !this.escalated ? { escalateAt: new Date(raisedAt + escalateMs).toISOString() } : {}),
      ...(this.escalated ? { escalatedTo: [...(this.rule.escalateTo ?? [])] } : {}),
      ...(this.rule.notRequester ? { notRequester: true } : {}),
      ...(timeoutMs !== undefined ? { expiresAt: new Date(raisedAt + timeoutMs).toISOString() } : {}),
    };
  }

  /** The votes in one line, for a hold that expires undecided: `1 of 2 approvals (alice)`. */
  summary(): string {
    const who = this.cast.map((vote) => vote.by).join(', ');
    return `${approvalsCounted(this.rule, this.cast).count} of ${approvalCount(this.rule.quorum)}${who ? ` (${who})` : ''}`;
  }
}
