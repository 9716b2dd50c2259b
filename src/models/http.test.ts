import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from './http';

const now = Date.parse('2015-10-21T07:28:00Z');

describe('parseRetryAfter', () => {
  it('reads delay-seconds as milliseconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(' 12 ', now)).toBe(12_000);
  });

  it('ignores anything that is not 1*DIGIT or an HTTP-date', () => {
    for (const header of ['-5', '+5', '0x10', '1e3', '1.5', '', ' ', 'soon', '12 seconds', 'Infinity']) {
      expect(parseRetryAfter(header, now), JSON.stringify(header)).toBeUndefined();
    }
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it('reads an IMF-fixdate as the time left until it', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:30 GMT', now)).toBe(30_000);
  });

  it('accepts the obsolete RFC 850 and asctime date formats', () => {
    expect(parseRetryAfter('Wednesday, 21-Oct-15 07:28:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Wed Oct 21 07:28:30 2015', now)).toBe(30_000);
  });

  it('gives 0 for a date in the past', () => {
    expect(parseRetryAfter('Tue, 20 Oct 2015 07:28:00 GMT', now)).toBe(0);
  });

  it('ignores dates that are not HTTP-dates', () => {
    expect(parseRetryAfter('2015-10-21T07:28:30Z', now)).toBeUndefined();
    expect(parseRetryAfter('Oct 21 2015', now)).toBeUndefined();
    expect(parseRetryAfter('Wed, 32 Oct 2015 07:28:30 GMT', now)).toBeUndefined();
  });
});
