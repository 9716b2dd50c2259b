import { describe, expect, it } from 'vitest';
import { costOf, pricedUsage } from './cost';
import { addUsage } from './usage';

describe('costOf', () => {
  const price = { inputPerMTok: 2, outputPerMTok: 10, cachedInputPerMTok: 0.5 };

  it('prices uncached input, cached input and output (reasoning included) each at its rate', () => {
    // 600 uncached × $2 + 400 cached × $0.5 + (100 + 50) output × $10, per million
    expect(costOf({ inputTokens: 1000, cachedContentTokens: 400, outputTokens: 100, thoughtsTokens: 50 }, price)).toBe(0.0029);
  });

  it('charges cached input at the input price when no cached price is given', () => {
    expect(costOf({ inputTokens: 1_000_000, cachedContentTokens: 500_000 }, { inputPerMTok: 3, outputPerMTok: 15 })).toBe(3);
  });

  it('costs nothing for a call that reported no tokens', () => {
    expect(costOf({}, price)).toBe(0);
  });

  it('keeps a cost the model reported itself, and leaves usage alone without a price', () => {
    expect(pricedUsage({ inputTokens: 10, cost: 1 }, price)).toEqual({ inputTokens: 10, cost: 1 });
    expect(pricedUsage({ inputTokens: 10 }, undefined)).toEqual({ inputTokens: 10 });
    expect(pricedUsage({ inputTokens: 1_000_000 }, price)).toEqual({ inputTokens: 1_000_000, cost: 2 });
  });

  it('sums costs without floating-point dust', () => {
    expect(addUsage({ cost: 0.1 }, { cost: 0.2 })).toEqual({ cost: 0.3 });
  });
});
