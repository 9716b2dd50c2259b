import { describe, expect, it } from 'vitest';
import { durationMs } from './duration';

describe('durationMs', () => {
  it('reads the durations flags and config take', () => {
    expect(durationMs('3 days')).toBe(259_200_000);
    expect(durationMs('72h')).toBe(259_200_000);
    expect(durationMs('250ms')).toBe(250);
    expect(durationMs('0s')).toBe(0);
  });
  it('says nothing for text that is not a duration', () => {
    expect(durationMs('forever')).toBeUndefined();
    expect(durationMs('')).toBeUndefined();
  });
});
