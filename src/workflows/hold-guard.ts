/**
 * Who may decide a hold (docs/auth.md): the guard the board (hold-board.ts) asks when a hold is
 * raised (the votes it is put to), when a decision is checked (without I/O: the update's
 * validator runs it too), before a decision is taken (the decider's proof verified by an
 * activity, and named by the rule), and whether a shared decision may take another hold. Its
 * rules are the approver rules of the run's agent; a rule that counts votes keeps them per hold
 * (hold-votes.ts). A hold no rule binds is anyone's who can reach the run. Runs in the workflow:
 * deterministic, no I/O of its own.
 */
import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';
import { approversOf, countsVotes, deciderSubject, mayDecide, type ApproverRule, type ApproverRules } from '../core/approvers';
import type { Decision } from '../core/holds';
import { principalOfMemo } from '../core/principal';
import type { DeciderSubject } from '../core/proofs';
import type { Hold, RunInput } from '../core/run';
import { HoldVotesBox } from './hold-votes';
import type { RunState } from './run-state';

/** A hold as the guard sees it: its record, and its votes when its rule counts them. */
export interface GuardedHold {
  record: Hold;
  votes?: HoldVotesBox | undefined;
}

export interface HoldGuardOptions {
  /** The run's state: a refused decider shows in its status. */
  run: RunState;
  /** The run's input: who sent the session turn (`notRequester`). */
  input: RunInput | undefined;
  /** The agent's approver rules, once its agent is resolved. */
  approvers?: (() => ApproverRules | undefined) | undefined;
  /** Whether a keel server's proof of who decides verifies (an activity: the key is the workers'). */
  verifyDecider?: ((subject: DeciderSubject, proof: string) => Promise<boolean>) | undefined;
}

/** The approver rules of one run's holds. */
export class HoldGuard {
  constructor(private readonly options: HoldGuardOptions) {}

  /** The votes a hold just raised is put to, when its rule counts them. */
  votesFor(record: Hold, times: { raisedAt: number; timeoutMs?: number | undefined }): HoldVotesBox | undefined {
    const rule = this.ruleOf(record);
    return rule && countsVotes(rule) ? new HoldVotesBox(rule, this.requesters(), times) : undefined;
  }

  /** Throws, as is, why `decision` may not decide `hold` when that is known without I/O: no verified decider, or a vote its votes refuse. */
  check(decision: Decision, hold: GuardedHold): void {
    const { interruptId } = decision;
    if (this.ruleOf(hold.record) && !decision.decidedByProof)
      throw ApplicationFailure.create({
        type: 'PERMISSION_DENIED',
        nonRetryable: true,
        message: `hold ${interruptId} (${hold.record.toolName ?? hold.record.kind}) may be decided only by ${this.decidersOf(hold)!.join(', ')}: send the decision through keel serve with auth on, which vouches for who decides; this one names no verified decider`,
      });
    const refused = hold.votes?.refusal(decision, interruptId);
    if (refused) throw ApplicationFailure.create({ type: refused.type, nonRetryable: true, message: refused.message });
  }

  /** For a hold bound by approver rules: the decider's proof verifies, and the rule names them (true). Throws the refusal otherwise; false for a hold no rule binds. */
  async admit(decision: Decision, hold: GuardedHold): Promise<boolean> {
    const rule = this.decidersOf(hold);
    if (!rule) return false;
    const proof = decision.decidedByProof;
    const verified = proof !== undefined && (await this.options.verifyDecider?.(deciderSubject(workflowInfo().workflowId, decision), proof));
    if (!verified)
      throw this.refusal(
        decision,
        `the proof of who decides hold ${decision.interruptId} does not verify (made up, changed, or signed with another key): decision refused`,
      );
    if (!mayDecide(rule, { decidedBy: decision.decidedBy, groups: decision.decidedByGroups }))
      throw this.refusal(
        decision,
        `hold ${decision.interruptId} (${hold.record.toolName ?? hold.record.kind}) may be decided only by ${rule.join(', ')}; ${decision.decidedBy ?? 'the decider'} (groups: ${decision.decidedByGroups?.join(', ') || 'none'}) is not one of them`,
      );
    return true;
  }

  /** Whether a shared decision (its decider `verified` or not) may take `other` too: only when that decider may decide it, and never a hold put to a vote. */
  mayShare(decision: Decision, verified: boolean, other: GuardedHold): boolean {
    const rule = this.ruleOf(other.record);
    return !other.votes && (!rule || (verified && mayDecide(rule.approvers, { decidedBy: decision.decidedBy, groups: decision.decidedByGroups })));
  }

  /** The rule that binds `hold` (its agent's approver rules); undefined: anyone who can reach the run. */
  private ruleOf(hold: Hold): ApproverRule | undefined {
    return approversOf(this.options.approvers?.(), hold.toolName);
  }

  /** Who may decide the hold now (its votes say, once it escalated); undefined: anyone who can reach the run. */
  private decidersOf({ record, votes }: GuardedHold): string[] | undefined {
    return votes?.deciders() ?? this.ruleOf(record)?.approvers;
  }

  /** Whom a hold's `notRequester` rule keeps from voting: the run's owner and the sender of the turn. */
  private requesters(): { owner?: string; sentBy?: string } {
    const owner = principalOfMemo(workflowInfo().memo).owner;
    const sentBy = this.options.input?.session?.sentBy?.owner;
    return { ...(owner ? { owner } : {}), ...(sentBy ? { sentBy } : {}) };
  }

  /** A decision refused for who sent it: PERMISSION_DENIED, and shown in the run's status. */
  private refusal(decision: Decision, message: string): ApplicationFailure {
    this.options.run.status.refusedDecision = { interruptId: decision.interruptId, reason: message };
    return ApplicationFailure.create({ type: 'PERMISSION_DENIED', nonRetryable: true, message });
  }
}
