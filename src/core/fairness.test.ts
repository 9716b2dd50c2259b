import { describe, expect, it } from 'vitest';
import { DEFAULT_FAIRNESS, FairnessConfigSchema, fairnessKeyOf, priorityOf } from './fairness';

describe('priorityOf', () => {
  it('gives each kind its default priority key, the tenant as fairness key and its weight when listed', () => {
    const fairness = FairnessConfigSchema.parse({ weights: { acme: 2.5 } });
    expect(priorityOf(fairness, 'interactive', 'acme')).toEqual({ priorityKey: 1, fairnessKey: 'acme', fairnessWeight: 2.5 });
    expect(priorityOf(fairness, 'run', 'globex')).toEqual({ priorityKey: 3, fairnessKey: 'globex' });
    expect(priorityOf(fairness, 'background', undefined)).toEqual({ priorityKey: 4 });
    expect(priorityOf(DEFAULT_FAIRNESS, 'eval', 'x').priorityKey).toBe(5);
    expect(priorityOf(DEFAULT_FAIRNESS, 'fork', 'x').priorityKey).toBe(4);
    expect(priorityOf(FairnessConfigSchema.parse({ priority: { run: 2 } }), 'run', undefined)).toEqual({ priorityKey: 2 });
  });

  it('refuses a priority outside 1-5, a weight outside 0.001-1000 and an unknown kind', () => {
    expect(FairnessConfigSchema.safeParse({ priority: { run: 6 } }).success).toBe(false);
    expect(FairnessConfigSchema.safeParse({ priority: { run: 1.5 } }).success).toBe(false);
    expect(FairnessConfigSchema.safeParse({ weights: { acme: 0 } }).success).toBe(false);
    expect(FairnessConfigSchema.safeParse({ weights: { acme: 5000 } }).success).toBe(false);
    expect(FairnessConfigSchema.safeParse({ priority: { batch: 3 } }).success).toBe(false);
  });
});

describe('fairnessKeyOf', () => {
  it('keeps a name that fits 64 bytes; a longer one becomes its start and a hash of the whole, within 64 bytes', () => {
    expect(fairnessKeyOf('acme')).toBe('acme');
    const fits = 'a'.repeat(64);
    expect(fairnessKeyOf(fits)).toBe(fits);
    const long = `${'t'.repeat(100)}-one`;
    const other = `${'t'.repeat(100)}-two`;
    const key = fairnessKeyOf(long);
    expect(new TextEncoder().encode(key).length).toBeLessThanOrEqual(64);
    expect(key.startsWith('t'.repeat(40))).toBe(true);
    expect(key).not.toBe(fairnessKeyOf(other));
    expect(fairnessKeyOf(long)).toBe(key);
    // Multi-byte characters are never cut in half.
    const wide = 'é'.repeat(60);
    const wideKey = fairnessKeyOf(wide);
    expect(new TextEncoder().encode(wideKey).length).toBeLessThanOrEqual(64);
    expect(wideKey).toMatch(/^é+~[0-9a-f]{16}$/);
  });
});
