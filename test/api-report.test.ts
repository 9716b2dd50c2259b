/**
 * The public surface of every entry point is the one checked in (api/*.api.md, made by
 * api-extractor from the built declarations): a change to it shows in review. After a change
 * meant to change it, `npm run api` rewrites the reports (and CHANGELOG.md says what changed).
 */
import { describe, expect, it } from 'vitest';
import { apiReports } from '../scripts/api-report';

describe('the public API', () => {
  it('matches the checked-in API reports', () => {
    const outcomes = apiReports({ update: false });
    const differing = outcomes.filter((outcome) => !outcome.matches).map((outcome) => outcome.name);
    expect(differing, `the public API of ${differing.join(', ')} changed: run npm run api, review api/*.api.md, and note it in CHANGELOG.md`).toEqual([]);
  }, 180_000);
});
