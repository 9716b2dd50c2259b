/**
 * Approver rules (docs/auth.md): who may decide an agent's holds, by tool name (`'*'`: any
 * hold), as `group:<name>` or `user:<subject>` of an identity a keel server verified. The server
 * signs who decided (a decider proof, src/core/proofs.ts) with the workers' signing key; the run
 * checks that proof and the rule before it takes the decision, so a decision sent straight to
 * Temporal (the `temporal` CLI, a client without the key) decides nothing. Pure: safe in workflow code.
 */
import type { Decision } from './holds';
import { decisionWord } from './holds';
import type { DeciderSubject } from './proofs';

/** An agent's rules, by tool name. */
export type ApproverRules = Record<string, string[]>;

/** Who may decide a hold on `toolName`: its tool's rule, else the agent's `'*'` rule; undefined: anyone. */
export function approversOf(rules: ApproverRules | undefined, toolName: string | undefined): string[] | undefined {
  if (!rules) return undefined;
  return (toolName !== undefined ? rules[toolName] : undefined) ?? rules['*'];
}

/** True when the verified `decidedBy` (with `groups`) is one `rule` names. */
export function mayDecide(
  rule: readonly string[],
  { decidedBy, groups = [] }: { decidedBy?: string | undefined; groups?: readonly string[] | undefined },
): boolean {
  return rule.some((entry) => (entry.startsWith('group:') ? groups.includes(entry.slice(6)) : entry === `user:${decidedBy}`));
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
