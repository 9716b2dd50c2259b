/** A decision's three shapes, told apart by their key, and errors that name the shape and the field. */
import { describe, expect, it } from 'vitest';
import { parseDecision } from './interrupts';

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
