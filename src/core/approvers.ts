/**
 * Approver rules (docs/auth.md): who may decide an agent's holds, by tool name (`'*'`: any
 * hold), as `group:<name>` or `user:<subject>` of an identity a keel server verified. The server
 * signs who decided (a decider proof, src/core/proofs.ts) with the workers' signing key; the run
 * checks that proof and the rule before it takes the decision, so a decision sent straight to
 * Temporal (the `temporal` CLI, a client without the key) decides nothing.
 *
 * A rule is a list of who may decide, or an object that asks for more: a `quorum` of distinct
 * verified people approving (one denial among them decides no), `escalateAfter` a duration and
 * `escalateTo` whom the hold is then also put to (one of them decides alone), `notRequester` (the
 * run's owner and the turn's sender may not vote) and `distinctGroups` (each approval counted must
 * come through another group of the rule). Pure: safe in workflow code.
 */
import { z } from 'zod';
import { DurationSchema } from './duration';
import { decisionWord, type Decision, type HoldVotes, type Vote } from './holds';
import type { DeciderSubject } from './proofs';

/** One who may decide: `group:<name>` or `user:<subject>`. */
const DeciderSchema = z.string().regex(/^(group|user):.+$/, 'expected group:<name> or user:<subject>');
const DecidersSchema = z.array(DeciderSchema).min(1, 'name at least one approver');

/** A rule asking for more than one approver, or for an escalation. */
const RuleObjectSchema = z
  .object({
    approvers: DecidersSchema,
    /** How many distinct verified people must approve (default 1). */
    quorum: z.number().int().min(1).max(20).optional(),
    /** After this long without a decision, `escalateTo` may decide as well (one of them alone). */
    escalateAfter: DurationSchema.optional(),
    escalateTo: DecidersSchema.optional(),
    /** The run's owner, and the sender of the turn that asked for the call, may not vote. */
    notRequester: z.boolean().optional(),
    /** Each approval counted comes through another group (or user) entry of `approvers`. */
    distinctGroups: z.boolean().optional(),
  })
  .strict()
  .superRefine((rule, context) => {
    if ((rule.escalateAfter === undefined) !== (rule.escalateTo === undefined))
      context.addIssue({
        code: 'custom',
        message: 'escalateAfter and escalateTo go together: name both or neither',
        path: [rule.escalateAfter ? 'escalateTo' : 'escalateAfter'],
      });
    if (rule.distinctGroups && (rule.quorum ?? 1) > rule.approvers.length)
      context.addIssue({
        code: 'custom',
        message: `a quorum of ${rule.quorum} from distinct groups needs at least ${rule.quorum} entries in approvers (it has ${rule.approvers.length})`,
        path: ['quorum'],
      });
  });

/** One tool's rule as written: a list of deciders, or an object with a quorum, an escalation, separation of duties. */
export const ApproverRuleSchema = z.union([DecidersSchema, RuleObjectSchema]);
export type ApproverRuleInput = z.input<typeof ApproverRuleSchema>;

/** An agent's rules, by tool name (`'*'`: every hold), as written in temporal.yaml or `defineAgent`. */
export const ApproverRulesSchema = z.record(z.string().min(1), ApproverRuleSchema);
export type ApproverRules = Record<string, ApproverRuleInput>;

/** A rule with its defaults: what the run checks decisions against. */
export interface ApproverRule {
  approvers: string[];
  quorum: number;
  escalateAfter?: string;
  escalateTo?: string[];
  notRequester: boolean;
  distinctGroups: boolean;
}

/** Who may decide a hold on `toolName`: its tool's rule, else the agent's `'*'` rule; undefined: anyone. */
export function approversOf(rules: ApproverRules | undefined, toolName: string | undefined): ApproverRule | undefined {
  if (!rules) return undefined;
  const written = (toolName !== undefined ? rules[toolName] : undefined) ?? rules['*'];
  if (written === undefined) return undefined;
  if (Array.isArray(written)) return { approvers: [...written], quorum: 1, notRequester: false, distinctGroups: false };
  const rule = written;
  return {
    approvers: [...rule.approvers],
    quorum: rule.quorum ?? 1,
    ...(rule.escalateAfter !== undefined && rule.escalateTo ? { escalateAfter: rule.escalateAfter, escalateTo: [...rule.escalateTo] } : {}),
    notRequester: rule.notRequester === true,
    distinctGroups: rule.distinctGroups === true,
  };
}

/** True when a rule asks for more than one verified decision from one list: votes are counted. */
export function countsVotes(rule: ApproverRule): boolean {
  return rule.quorum > 1 || rule.escalateTo !== undefined || rule.notRequester || rule.distinctGroups;
}

/** A verified decider: the subject and the groups a keel server signed. */
export interface Decider {
  decidedBy?: string | undefined;
  groups?: readonly string[] | undefined;
}

/** True when `entry` (`group:<name>` or `user:<subject>`) names the decider. */
function names(entry: string, { decidedBy, groups = [] }: Decider): boolean {
  return entry.startsWith('group:') ? groups.includes(entry.slice(6)) : entry === `user:${decidedBy}`;
}

/** True when the verified `decidedBy` (with `groups`) is one `rule` names. */
export function mayDecide(rule: readonly string[], decider: Decider): boolean {
  return rule.some((entry) => names(entry, decider));
}

/**
 * The most approvals `votes` count toward `rule`'s quorum: distinct people, and with
 * `distinctGroups` each matched to another entry of `approvers` (a matching: one person in two
 * groups fills one of them). Small by construction (at most 20 needed, a few dozen entries).
 */
export function approvalsCounted(rule: ApproverRule, votes: readonly Vote[]): { count: number; filled: Set<string> } {
  const approvals = votes.filter((vote) => vote.approved && !vote.escalated);
  if (!rule.distinctGroups) return { count: new Set(approvals.map((vote) => vote.by)).size, filled: new Set() };
  const holder = new Map<string, number>(); // entry -> index of the approval filling it
  const place = (index: number, seen: Set<string>): boolean => {
    const vote = approvals[index]!;
    for (const entry of rule.approvers) {
      if (seen.has(entry) || !names(entry, { decidedBy: vote.by, groups: vote.groups })) continue;
      seen.add(entry);
      const other = holder.get(entry);
      if (other === undefined || place(other, seen)) {
        holder.set(entry, index);
        return true;
      }
    }
    return false;
  };
  let count = 0;
  for (let index = 0; index < approvals.length; index++) if (place(index, new Set())) count++;
  return { count, filled: new Set(holder.keys()) };
}

/** What the votes so far decide: approved (a quorum, or an escalation's approval), denied (any denial), or nothing yet. */
export function tally(rule: ApproverRule, votes: readonly Vote[]): 'approved' | 'denied' | undefined {
  if (votes.some((vote) => !vote.approved)) return 'denied';
  if (votes.some((vote) => vote.escalated && vote.approved)) return 'approved';
  return approvalsCounted(rule, votes).count >= rule.quorum ? 'approved' : undefined;
}

/** Who may still vote, as the rule names them: its entries not yet filled (users who voted and, with distinctGroups, groups filled are left out). */
export function mayStillVote(rule: ApproverRule, votes: readonly Vote[], escalated: boolean): string[] {
  const voted = new Set(votes.map((vote) => `user:${vote.by}`));
  const { filled } = approvalsCounted(rule, votes);
  const open = rule.approvers.filter((entry) => !voted.has(entry) && !filled.has(entry));
  return escalated ? [...new Set([...open, ...(rule.escalateTo ?? []).filter((entry) => !voted.has(entry))])] : open;
}

/** What a decider proof of `decision` for run `runId` covers. */
export function deciderSubject(runId: string, decision: Decision): DeciderSubject {
  return {
    kind: 'decider',
    runId,
    interruptId: decision.interruptId,
    decidedBy: decision.decidedBy ?? '',
    groups: [...(decision.decidedByGroups ?? [])].sort(),
    decision: decisionWord(decision),
  };
}

/** `2 approvals`, `1 approval`. */
export function approvalCount(count: number): string {
  return `${count} approval${count === 1 ? '' : 's'}`;
}

/** A hold's votes in one line (Slack notices, `keel holds`): `1 of 2 approvals (carol approved) · may still vote: group:finance`. */
export function votesText(votes: HoldVotes): string {
  const cast = votes.cast.map((vote) => `${vote.by} ${vote.approved ? 'approved' : 'denied'}`).join(', ');
  return [
    `${votes.approvals} of ${approvalCount(votes.quorum)}${cast ? ` (${cast})` : ''}`,
    `may still vote: ${votes.mayVote.join(', ') || 'no one'}`,
    ...(votes.escalatedTo ? [`escalated to ${votes.escalatedTo.join(', ')}`] : []),
    ...(votes.escalateAt ? [`escalates ${votes.escalateAt}`] : []),
    ...(votes.expiresAt ? [`expires ${votes.expiresAt}`] : []),
  ].join(' · ');
}
