import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunResult } from '../core/run';
import { loadSuite, recordedCase } from './eval-suite';

const dir = mkdtempSync(join(tmpdir(), 'keel-eval-suite-'));

describe('eval suite files', () => {
  it('reads a TypeScript module (its default export) like a YAML file, with the defaults', () => {
    const path = join(dir, 'suite.ts');
    writeFileSync(path, "export default { agent: 'triage', cases: [{ prompt: 'hi', scorers: [{ contains: 'hello' }] }] };\n");
    expect(loadSuite(path)).toEqual({
      agent: 'triage',
      threshold: 1,
      missing: 'fail',
      safe: [],
      stubs: {},
      concurrency: 8,
      variants: [{ name: 'current' }],
      scorers: [],
      cases: [{ prompt: 'hi', scorers: [{ contains: 'hello' }] }],
    });
  });

  it('names the file and the field of what is wrong, in one line', () => {
    const path = join(dir, 'bad.yaml');
    writeFileSync(path, 'cases:\n  - prompt: hi\n    history: a.json\n');
    expect(() => loadSuite(path)).toThrow(`${path}: cases[0]: a case has exactly one of history, query or prompt`);
    writeFileSync(path, 'variants: [{ name: a }, { name: a }]\ncases: [{ prompt: hi }]\n');
    expect(() => loadSuite(path)).toThrow(`${path}: variants: variant names must differ`);
    writeFileSync(path, 'cases: [\n');
    expect(() => loadSuite(path)).toThrow(new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: `));
  });

  it("takes a recorded run's prompt (before its first reply), each tool call with its result, and its answer", () => {
    const result = {
      text: 'done',
      messages: [
        { role: 'system', content: [{ text: 'Be brief.' }] },
        { role: 'user', content: [{ text: 'add and echo' }] },
        {
          role: 'model',
          content: [{ toolRequest: { name: 'add', ref: '0', input: { a: 1 } } }, { toolRequest: { name: 'echo', ref: '1', input: { v: 'x' } } }],
        },
        {
          role: 'tool',
          content: [{ toolResponse: { name: 'add', ref: '0', output: { sum: 1 } } }, { toolResponse: { name: 'echo', ref: '1', output: { v: 'x' } } }],
        },
        { role: 'model', content: [{ toolRequest: { name: 'echo', ref: '0', input: { v: 'y' } } }] },
        { role: 'tool', content: [{ toolResponse: { name: 'echo', ref: '0', output: { v: 'y' } } }] },
        { role: 'model', content: [{ text: 'done' }] },
      ],
      turns: 3,
    } as unknown as RunResult;
    expect(recordedCase(result)).toEqual({
      messages: [{ role: 'user', content: [{ text: 'add and echo' }] }],
      records: [
        { name: 'add', input: { a: 1 }, output: { sum: 1 } },
        { name: 'echo', input: { v: 'x' }, output: { v: 'x' } },
        { name: 'echo', input: { v: 'y' }, output: { v: 'y' } },
      ],
      recordedText: 'done',
    });
  });
});
