import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describeZodError } from './schema-errors';

describe('describeZodError', () => {
  it('names the field and what was expected', () => {
    const result = z.object({ retry: z.object({ maxRetries: z.number() }) }).safeParse({ retry: { maxRetries: 'three' } });
    expect(describeZodError(result.error!, 'config')).toBe('config.retry.maxRetries: Invalid input: expected number, received string');
  });

  it('reports, for a union no branch matched, the branch the value got furthest into', () => {
    const Shape = z.union([
      z.object({ kind: z.literal('scripted').default('scripted'), script: z.array(z.object({ status: z.enum(['OK', 'NOPE']) })) }).strict(),
      z.object({ kind: z.literal('http'), url: z.string() }).strict(),
    ]);
    const result = Shape.safeParse({ script: [{ status: 'BAD' }] });
    expect(describeZodError(result.error!, 'models[0]')).toBe('models[0].script[0].status: Invalid option: expected one of "OK"|"NOPE"');
  });

  it('keeps the union message when no branch got anywhere', () => {
    const result = z.union([z.object({ a: z.string() }), z.string()]).safeParse(5);
    expect(describeZodError(result.error!)).toBe('(root): Invalid input');
  });
});
