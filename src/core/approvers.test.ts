import { describe, expect, it } from 'vitest';
import { ApproverRulesSchema, approversOf, countsVotes, mayStillVote, tally, type ApproverRule } from './approvers';
import { describeZodError } from './schema-errors';
import type { Vote } from './holds';

const vote = (by: string, groups: string[], approved = true): Vote => ({ by, groups, approved, at: '2026-12-07T00:00:00.000Z' });
const rule = (given: Partial<ApproverRule> & { approvers: string[] }): ApproverRule => ({ quorum: 1, notRequester: false, distinctGroups: false, ...given });

describe('approver rules', () => {
  it('reads a list as a rule of one approval, and an object with its defaults', () => {
    expect(approversOf({ book: ['group:ops'] }, 'book')).toEqual(rule({ approvers: ['group:ops'] }));
    expect(countsVotes(approversOf({ book: ['group:ops'] }, 'book')!)).toBe(false);
    const written = { '*': { approvers: ['group:finance'], quorum: 2, escalateAfter: '4h', escalateTo: ['group:cfo'], notRequester: true } };
    expect(approversOf(written, 'pay')).toEqual({
      approvers: ['group:finance'],
      quorum: 2,
      escalateAfter: '4h',
      escalateTo: ['group:cfo'],
      notRequester: true,
      distinctGroups: false,
    });
    expect(approversOf(undefined, 'pay')).toBeUndefined();
  });

  it('refuses a rule that cannot be met or is half written, saying where', () => {
    const problem = (rules: unknown) => {
      const parsed = ApproverRulesSchema.safeParse(rules);
      return parsed.success ? 'ok' : describeZodError(parsed.error, 'approvers');
    };
    expect(problem({ pay: { approvers: ['group:a'], escalateAfter: '1h' } })).toContain('approvers.pay.escalateTo: escalateAfter and escalateTo go together');
    expect(problem({ pay: { approvers: ['group:a'], quorum: 2, distinctGroups: true } })).toContain(
      'a quorum of 2 from distinct groups needs at least 2 entries in approvers (it has 1)',
    );
    expect(problem({ pay: { approvers: ['finance'] } })).toContain('group:<name> or user:<subject>');
    expect(problem({ pay: { approvers: ['group:a'], quorom: 2 } })).toContain('quorom');
    expect(problem({ pay: ['group:a'], book: { approvers: ['user:alice', 'group:b'], quorum: 2 } })).toBe('ok');
  });
});

describe('tally', () => {
  const finance = rule({ approvers: ['group:finance'], quorum: 2 });

  it('needs the quorum in distinct people; one denial decides no', () => {
    expect(tally(finance, [vote('alice', ['finance'])])).toBeUndefined();
    expect(tally(finance, [vote('alice', ['finance']), vote('alice', ['finance'])])).toBeUndefined();
    expect(tally(finance, [vote('alice', ['finance']), vote('carol', ['finance'])])).toBe('approved');
    expect(tally(finance, [vote('alice', ['finance']), vote('carol', ['finance'], false)])).toBe('denied');
  });

  it('with distinctGroups, one person in two groups fills one of them', () => {
    const split = rule({ approvers: ['group:finance', 'group:legal'], quorum: 2, distinctGroups: true });
    expect(tally(split, [vote('alice', ['finance', 'legal']), vote('carol', ['finance'])])).toBe('approved');
    expect(tally(split, [vote('carol', ['finance']), vote('dave', ['finance'])])).toBeUndefined();
    expect(mayStillVote(split, [vote('carol', ['finance'])], false)).toEqual(['group:legal']);
    // A matching, not a first fit: alice (both) first takes finance, then gives it up for carol.
    expect(tally(split, [vote('alice', ['finance', 'legal']), vote('carol', ['finance'])])).toBe('approved');
  });

  it('an escalation’s approval decides alone; who may still vote includes it once escalated', () => {
    const escalating = rule({ approvers: ['group:finance'], quorum: 2, escalateAfter: '4h', escalateTo: ['group:cfo'] });
    expect(tally(escalating, [{ ...vote('erin', ['cfo']), escalated: true }])).toBe('approved');
    expect(mayStillVote(escalating, [vote('alice', ['finance'])], false)).toEqual(['group:finance']);
    expect(mayStillVote(escalating, [vote('alice', ['finance'])], true)).toEqual(['group:finance', 'group:cfo']);
  });
});
