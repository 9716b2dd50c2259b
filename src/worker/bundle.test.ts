import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WORKFLOWS_PATH, WORKFLOW_TYPES } from './bundle';

describe('the workflow bundle', () => {
  it('names every workflow type the entry exports (the metrics labels and the middleware entry go by them)', () => {
    const exported = [...readFileSync(WORKFLOWS_PATH, 'utf8').matchAll(/export \{ (\w+) \}/g)].map((match) => match[1]);
    expect([...WORKFLOW_TYPES].sort()).toEqual(exported.sort());
  });
});
