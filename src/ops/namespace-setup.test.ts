import { describe, expect, it } from 'vitest';
import { describeRetention, reportLines, retentionProblem } from './namespace-setup';

describe('keel namespace setup', () => {
  it('takes a retention as Temporal durations are written, and names one it cannot read', () => {
    expect(retentionProblem('3 days')).toBeUndefined();
    expect(retentionProblem('72h')).toBeUndefined();
    expect(retentionProblem('forever')).toBe('--retention: a duration such as "3 days" or "72h", not "forever"');
    expect(retentionProblem('0s')).toBe('--retention: a duration such as "3 days" or "72h", not "0s"');
  });

  it('says a retention in whole days or hours when it is one', () => {
    expect(describeRetention(86_400_000)).toBe('1 day');
    expect(describeRetention(3 * 86_400_000)).toBe('3 days');
    expect(describeRetention(36 * 3_600_000)).toBe('36 hours');
    expect(describeRetention(90_000)).toBe('90 seconds');
  });

  it('reports each thing it set up on a line of its own, and a retention it left alone with how to change it', () => {
    expect(
      reportLines({
        address: 'temporal:7233',
        namespace: { name: 'agents', created: false, retention: '3 days', retentionNotApplied: '7 days' },
        searchAttributes: [
          { name: 'KeelAgent', type: 'Keyword', created: true },
          { name: 'KeelStatus', type: 'Keyword', created: false },
        ],
      }),
    ).toEqual([
      'keel namespace setup: namespace "agents" at temporal:7233: already registered, retention 3 days (kept: --retention 7 days applies to a namespace this command registers; to change it: temporal operator namespace update --namespace agents --retention <duration>)',
      'keel namespace setup: search attribute KeelAgent (Keyword): registered',
      'keel namespace setup: search attribute KeelStatus (Keyword): already registered',
    ]);
  });
});
