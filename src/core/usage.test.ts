import { describe, expect, it } from 'vitest';
import { KeelError } from './errors';
import { MAX_USAGE_COST, MAX_USAGE_COUNT, UsageSchema, addUsage, checkedUsage, type Usage, type UsageSource } from './usage';

/** What `checkedUsage` threw, as status, message and details. */
function refusal(usage: unknown, source: UsageSource = { modelName: 'scripted/m' }): { status: string; message: string; details: object } {
  try {
    checkedUsage(usage, source);
  } catch (error) {
    if (!KeelError.isInstance(error)) throw error;
    return { status: error.status, message: error.message, details: error.details };
  }
  throw new Error(`checkedUsage took ${JSON.stringify(usage)}`);
}

/** Custom counters whose keys an object literal or a zod record would lose. */
const awkward = (): Record<string, number> => JSON.parse('{"__proto__": 1, "constructor": 2, "toString": 3}') as Record<string, number>;

describe('checkedUsage', () => {
  it('takes usage keel can count, as it was reported', () => {
    const usage = { inputTokens: 1000, outputTokens: 0, cost: 0.0029, custom: { searches: 2 } };
    expect(checkedUsage(usage, { toolName: 'search' })).toEqual(usage);
    expect(checkedUsage(undefined, { modelName: 'scripted/m' })).toEqual({});
    expect(checkedUsage({ inputTokens: MAX_USAGE_COUNT, cost: MAX_USAGE_COST }, { modelName: 'scripted/m' })).toEqual({
      inputTokens: MAX_USAGE_COUNT,
      cost: MAX_USAGE_COST,
    });
  });

  it('refuses a negative count, NaN and Infinity as DATA_LOSS, naming the source and the field', () => {
    expect(refusal({ cost: -1 })).toEqual({
      status: 'DATA_LOSS',
      message: 'model "scripted/m" reported usage keel cannot count: usage.cost: must not be negative (got -1)',
      details: { modelName: 'scripted/m', path: 'usage.cost' },
    });
    expect(refusal({ inputTokens: -5 }, { toolName: 'search' })).toMatchObject({
      status: 'DATA_LOSS',
      message: 'tool "search" reported usage keel cannot count: usage.inputTokens: must not be negative (got -5)',
      details: { toolName: 'search' },
    });
    expect(refusal({ outputTokens: Number.NaN }).message).toBe(
      'model "scripted/m" reported usage keel cannot count: usage.outputTokens: must be a finite number (got NaN)',
    );
    expect(refusal({ totalTokens: Number.POSITIVE_INFINITY }).message).toContain('usage.totalTokens: must be a finite number (got Infinity)');
    expect(refusal({ cost: '0.5' }).message).toContain('usage.cost: must be a finite number (got "0.5")');
  });

  it('refuses a count past what keel adds exactly (a cost of 1e300 included)', () => {
    expect(refusal({ cost: 1e300 }, { toolName: 'pricey' }).message).toBe(
      `tool "pricey" reported usage keel cannot count: usage.cost: must be at most ${MAX_USAGE_COST} (got 1e+300)`,
    );
    expect(refusal({ inputTokens: MAX_USAGE_COUNT + 2 }).message).toContain(`usage.inputTokens: must be at most ${MAX_USAGE_COUNT}`);
  });

  it('checks custom counters key by key, whatever the key', () => {
    const custom = { ...awkward(), ...JSON.parse('{"__proto__": -1}') };
    expect(refusal({ custom }).message).toBe('model "scripted/m" reported usage keel cannot count: usage.custom.__proto__: must not be negative (got -1)');
    expect(refusal({ custom: { searches: Number.NaN } }).message).toContain('usage.custom.searches: must be a finite number (got NaN)');
    expect(refusal({ custom: [1] }).message).toContain('usage.custom: must be an object of counters');
  });

  it('refuses a field it does not know, naming it', () => {
    expect(refusal({ costs: 1 }).message).toContain('usage: Unrecognized key: "costs"');
  });

  it('keeps custom keys named __proto__, constructor and toString, through a JSON round trip', () => {
    const checked = checkedUsage({ custom: awkward() }, { toolName: 'odd' });
    const again = UsageSchema.parse(JSON.parse(JSON.stringify(checked)));
    expect(Object.entries(again.custom!)).toEqual([
      ['__proto__', 1],
      ['constructor', 2],
      ['toString', 3],
    ]);
  });
});

describe('addUsage', () => {
  it('adds field by field and custom counters by key', () => {
    expect(addUsage({ inputTokens: 10, custom: { a: 1 } }, { inputTokens: 5, outputTokens: 2, custom: { a: 2, b: 1 } })).toEqual({
      inputTokens: 15,
      outputTokens: 2,
      custom: { a: 3, b: 1 },
    });
    expect(addUsage({ cost: 0.1 }, { cost: 0.2 })).toEqual({ cost: 0.3 });
  });

  it('keeps custom keys named __proto__, constructor and toString, summed', () => {
    const once: Usage = { custom: awkward() };
    const sum = addUsage(addUsage({}, once), once);
    expect(Object.entries(sum.custom!)).toEqual([
      ['__proto__', 2],
      ['constructor', 4],
      ['toString', 6],
    ]);
    expect(Object.getPrototypeOf(sum.custom)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(sum))).toEqual({ custom: JSON.parse('{"__proto__": 2, "constructor": 4, "toString": 6}') });
  });

  it('makes a sum keel cannot count exactly an error, never Infinity, null or zero', () => {
    const half = MAX_USAGE_COST / 2 + 1;
    expect(() => addUsage({ cost: half }, { cost: half }, 'what tool "pricey" reported')).toThrow(
      `adding what tool "pricey" reported would take usage.cost to ${Math.round(half * 2 * 1e9) / 1e9}, past ${MAX_USAGE_COST}, the most keel counts exactly`,
    );
    expect(() => addUsage({ cost: 1e300 }, { cost: 1e300 })).toThrow(/usage\.cost to Infinity/);
    expect(() => addUsage({ totalTokens: MAX_USAGE_COUNT }, { totalTokens: 1 })).toThrow(/usage\.totalTokens/);
    expect(() => addUsage({ custom: { calls: MAX_USAGE_COUNT } }, { custom: { calls: 1 } })).toThrow(/usage\.custom\.calls/);
    expect(() => addUsage({ cost: 1e300 }, { cost: 1e300 })).toThrow(expect.objectContaining({ status: 'DATA_LOSS' }));
  });
});
