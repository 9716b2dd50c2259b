/** What JSON cannot carry in a tool's output, named by its path. */
import { describe, expect, it } from 'vitest';
import { unrepresentable } from './payload-limit';

describe('unrepresentable', () => {
  it('accepts plain JSON, dates and toJSON objects', () => {
    expect(unrepresentable({ a: [1, 'x', null, true, { b: 2 }], when: new Date(0) })).toBeUndefined();
    // The same object twice (not a cycle) is fine.
    const shared = { v: 1 };
    expect(unrepresentable({ x: shared, y: [shared] })).toBeUndefined();
  });

  it('names the path and what is there', () => {
    expect(unrepresentable({ items: [{ price: 1 }, { price: 10n }] })).toBe('(output).items[1].price is a BigInt (10n); send it as a string or a number');
    expect(unrepresentable({ a: { b: undefined } })).toBe('(output).a.b is undefined');
    expect(unrepresentable({ 'odd key': () => 1 })).toBe('(output)["odd key"] is a function');
    expect(unrepresentable([1, Number.NaN])).toBe('(output)[1] is NaN');
    expect(unrepresentable({ total: Number.POSITIVE_INFINITY })).toBe('(output).total is Infinity');
    const loop: Record<string, unknown> = { name: 'x' };
    loop.self = loop;
    expect(unrepresentable(loop)).toBe('(output).self refers back to an object that contains it (a cycle)');
  });
});
