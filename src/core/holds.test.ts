/** Decisions: their three envelopes, told apart by their key, and the one step from an envelope to what a hold's stage receives. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { decisionJsonSchema, decisionRecord, defineHold, parseDecision, resumption, takesApproval, undeclaredHold } from './holds';

const errorOf = (raw: unknown) => {
  const parsed = parseDecision(raw);
  if (parsed.success) throw new Error('expected a refusal');
  return parsed.error;
};

describe('parseDecision', () => {
  it('accepts each shape', () => {
    expect(parseDecision({ interruptId: 'a', approved: true })).toEqual({ success: true, data: { interruptId: 'a', approved: true } });
    expect(parseDecision({ interruptId: 'a', respond: { ok: 1 } })).toEqual({ success: true, data: { interruptId: 'a', respond: { ok: 1 } } });
    expect(parseDecision({ interruptId: 'a', restart: true, input: { x: 1 } })).toEqual({
      success: true,
      data: { interruptId: 'a', restart: true, input: { x: 1 } },
    });
  });

  it('names the shape meant and the bad field', () => {
    expect(errorOf({ interruptId: 'a', approved: 'yes' })).toBe(
      'malformed decision { interruptId, approved, reason? } (approve or deny): approved: expected boolean, received string',
    );
    expect(errorOf({ approved: true })).toBe(
      'malformed decision { interruptId, approved, reason? } (approve or deny): interruptId: expected string, received undefined',
    );
    expect(errorOf({ interruptId: 'a', approved: true, because: 'x' })).toBe(
      'malformed decision { interruptId, approved, reason? } (approve or deny): (root): Unrecognized key: "because"',
    );
  });

  it('says which keys tell the shapes apart when none or several are there', () => {
    expect(errorOf({ interruptId: 'a', approve: true })).toMatch(
      /^malformed decision: expected one of \{ interruptId, approved, reason\? \} \(approve or deny\), .*; got the keys interruptId, approve$/,
    );
    expect(errorOf({ interruptId: 'a', approved: true, respond: 1 })).toMatch(/^malformed decision: it has "approved" and "respond"; send exactly one of them/);
    expect(errorOf('approve')).toMatch(/^malformed decision: expected a JSON object, .*; got string$/);
  });
});

describe('resumption: what a decision hands the stage that raised the hold', () => {
  const strict = defineHold({
    kind: 'spending',
    question: ({ amount }) => `spend ${amount}?`,
    data: z.object({ amount: z.number() }),
    decision: z.union([z.object({ approved: z.boolean() }).strict(), z.object({ limit: z.number() }).strict()]),
  });
  const deciding = defineHold({ ...strict, kind: 'deciding', respond: 'decide', decision: z.object({ respond: z.unknown() }).loose() });

  it('parses the payload with the kind, and refuses what it does not take naming the field', () => {
    expect(resumption(strict, { restart: { limit: 5 } })).toEqual({ success: true, value: { payload: { limit: 5 } } });
    expect(resumption(strict, { approved: true })).toEqual({ success: true, value: { payload: { approved: true } } });
    const refused = resumption(strict, { restart: { limit: 'x' } });
    expect(refused.success).toBe(false);
    expect(!refused.success && refused.error).toMatch(/fits none of its forms: \(1\) .* \(2\) limit: expected number, received string/);
    expect(resumption(strict, { restart: true }).success).toBe(false);
  });

  it('holds a decision sent to a waiting run to the alternatives the kind declares, not its fallback, and names them', () => {
    const lenient = defineHold({
      kind: 'approval',
      question: () => 'ok?',
      data: z.object({}),
      decision: z.object({ approved: z.boolean(), reason: z.string().optional() }).catch({ approved: false }),
    });
    // A resume (return mode) keeps the reference's semantics: what does not approve denies.
    expect(resumption(lenient, { restart: { aproved: true } })).toEqual({ success: true, value: { payload: { approved: false } } });
    expect(resumption(lenient, { restart: true })).toEqual({ success: true, value: { payload: { approved: false } } });
    for (const restart of [{ happened: false }, { aproved: true }, true] as const) {
      const refused = resumption(lenient, { restart }, { declared: true });
      expect(refused.success, JSON.stringify(restart)).toBe(false);
      expect(!refused.success && refused.error).toMatch(/; the hold takes \{ approved: boolean, reason\?: string \}$/);
    }
    expect(resumption(lenient, { restart: { approved: true } }, { declared: true })).toEqual({ success: true, value: { payload: { approved: true } } });
    expect(resumption(lenient, { approved: false, reason: 'no' }, { declared: true })).toEqual({
      success: true,
      value: { payload: { approved: false, reason: 'no' } },
    });
    const union = resumption(strict, { restart: { limt: 5 } }, { declared: true });
    expect(!union.success && union.error).toContain('the hold takes { approved: boolean } or { limit: number }');
  });

  it('keeps a replacement input, answers the call with a stand-in output, or hands it to a deciding kind', () => {
    expect(resumption(strict, { restart: { limit: 5 }, input: { amount: 1 } })).toEqual({
      success: true,
      value: { payload: { limit: 5 }, input: { amount: 1 } },
    });
    expect(resumption(strict, { respond: { paid: 0 } })).toEqual({ success: true, value: { output: { paid: 0 } } });
    expect(resumption(deciding, { respond: { paid: 0 } })).toEqual({ success: true, value: { payload: { respond: { paid: 0 } } } });
  });

  it('takes any payload as sent for a hold nobody declared', () => {
    const tool = undeclaredHold('tool');
    expect(resumption(tool, { restart: true })).toEqual({ success: true, value: { payload: true } });
    expect(resumption(tool, { restart: { yes: 1 } })).toEqual({ success: true, value: { payload: { yes: 1 } } });
    expect(tool.question({ question: 'Erase?' }, { toolName: 'erase' })).toBe('Erase?');
    expect(tool.question({}, { toolName: 'erase' })).toBe('decide the held call of erase');
  });

  it("publishes the decision's input side as JSON Schema, and says whether approve and deny can decide it", () => {
    const schema = decisionJsonSchema(strict);
    expect(schema).toEqual(decisionJsonSchema(strict));
    expect(schema).not.toHaveProperty('$schema');
    expect(takesApproval(schema)).toBe(true);
    expect(takesApproval(decisionJsonSchema(defineHold({ ...strict, decision: z.object({ limit: z.number() }) })))).toBe(false);
    expect(takesApproval(decisionJsonSchema(undeclaredHold('tool')))).toBe(true);
  });
});

describe('decision records', () => {
  const hold = { id: 'i1', kind: 'approval', toolName: 'book_train', ref: '0' };

  it('say who decided what, when and how', () => {
    expect(decisionRecord(hold, { approved: false, reason: 'no', decidedBy: 'alice' }, 'update', { at: 'now' })).toEqual({
      interruptId: 'i1',
      kind: 'approval',
      toolName: 'book_train',
      ref: '0',
      decision: 'denied',
      decidedBy: 'alice',
      at: 'now',
      route: 'update',
      reason: 'no',
    });
  });

  it('keep a small restart payload, never a large one, and the forwarding run only for a forwarded decision', () => {
    expect(decisionRecord(hold, { restart: { limit: 5 } }, 'signal', { at: 'now' })).toMatchObject({ decision: 'restart', payload: { limit: 5 } });
    expect(decisionRecord(hold, { restart: { text: 'x'.repeat(2000) } }, 'update', { at: 'now' })).not.toHaveProperty('payload');
    expect(decisionRecord(hold, { approved: true, forwardedFrom: 'root' }, 'forwarded', { at: 'now' })).toMatchObject({ forwardedFrom: 'root' });
    expect(decisionRecord(hold, { approved: true, forwardedFrom: 'root' }, 'signal', { at: 'now' })).not.toHaveProperty('forwardedFrom');
  });
});
