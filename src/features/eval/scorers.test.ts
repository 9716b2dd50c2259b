import { describe, expect, it } from 'vitest';
import type { RunResult } from '../../core/run';
import { score, scorerLabel } from './scorers';
import type { EvalCase, Scorer } from './suite';

/** A result whose conversation called `lookup` with { id: 7 } and answered `text`. */
const resultOf = (text: string, output?: unknown): RunResult => ({
  finishReason: 'stop',
  text,
  message: { role: 'model', content: [{ text }] },
  messages: [
    { role: 'user', content: [{ text: 'where is order 7?' }] },
    { role: 'model', content: [{ toolRequest: { name: 'lookup', ref: '0', input: { id: 7, verbose: false } } }] },
    { role: 'tool', content: [{ toolResponse: { name: 'lookup', ref: '0', output: { status: 'shipped' } } }] },
    { role: 'model', content: [{ text }] },
  ],
  usage: {},
  turns: 2,
  artifacts: [],
  tasks: [],
  interrupts: [],
  decisions: [],
  ...(output !== undefined ? { output } : {}),
});

const evalCase: EvalCase = {
  name: 'c',
  agent: 'a',
  messages: [{ role: 'user', content: [{ text: 'where is order 7?' }] }],
  records: [],
  scorers: [],
  source: 'by hand',
  recordedText: 'order 7 is shipped',
};
const judge = async ({ answer }: { answer: string }) => ({ pass: answer.includes('7'), reason: `judged "${answer}"` });
const verdict = (scorer: Scorer, text = 'order 7 is shipped', output?: unknown) => score(scorer, { result: resultOf(text, output), evalCase, judge });

describe('eval scorers', () => {
  it('passes and fails each kind, saying why in one line', async () => {
    expect(await verdict({ contains: 'shipped' })).toEqual({ scorer: 'contains "shipped"', passed: true, reason: 'found' });
    expect(await verdict({ contains: 'lost' })).toEqual({ scorer: 'contains "lost"', passed: false, reason: 'the answer "order 7 is shipped" lacks "lost"' });
    expect((await verdict({ notContains: 'lost' })).passed).toBe(true);
    expect((await verdict({ equals: 'order 7 is shipped' })).passed).toBe(true);
    expect(await verdict({ matches: '^order \\d+ is lost$' })).toMatchObject({
      passed: false,
      reason: 'the answer "order 7 is shipped" does not match /^order \\d+ is lost$/',
    });
    expect((await verdict({ sameAsRecorded: true })).passed).toBe(true);
    expect(await verdict({ sameAsRecorded: true }, 'order 7 is lost')).toMatchObject({
      passed: false,
      reason: 'the answer is "order 7 is lost"; recorded: "order 7 is shipped"',
    });
    // A tool scorer's input is a subset: the call had more fields.
    expect(await verdict({ tool: 'lookup', input: { id: 7 } })).toEqual({ scorer: 'tool lookup {"id":7}', passed: true, reason: 'called' });
    expect(await verdict({ tool: 'lookup', input: { id: 8 } })).toMatchObject({ passed: false, reason: 'called with {"id":7,"verbose":false}' });
    expect(await verdict({ tool: 'refund' })).toMatchObject({ passed: false, reason: 'not called (calls: lookup)' });
    expect(await verdict({ noTool: 'lookup' })).toMatchObject({ passed: false, reason: 'called 1 time' });
    expect(await verdict({ judge: { model: 'm', rubric: 'names the order' } })).toEqual({
      scorer: 'judge m',
      passed: true,
      reason: 'judged "order 7 is shipped"',
    });
  });

  it('checks a JSON Schema against the structured output, or the text read as JSON, naming the path', async () => {
    const schema = { type: 'object', properties: { id: { type: 'number' } }, required: ['id'] };
    expect((await verdict({ schema }, '', { id: 7 })).passed).toBe(true);
    expect((await verdict({ schema }, '{"id": 7}')).passed).toBe(true);
    const wrong = await verdict({ schema }, '{"id": "seven"}');
    expect(wrong).toMatchObject({ scorer: 'schema', passed: false });
    expect(wrong.reason).toMatch(/^output\.id: /);
    expect((await verdict({ schema }, 'not json')).passed).toBe(false);
  });

  it('labels each scorer as the report shows it', () => {
    expect(scorerLabel({ noTool: 'refund' })).toBe('noTool "refund"');
    expect(scorerLabel({ schema: {} })).toBe('schema');
  });
});
