/** Raising a hold: the stage's declared kind, its data checked, and the kind recorded when it is not the first. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineHold } from '../core/holds';
import { holdKinds, raiseHold } from './hold-kinds';
import type { MiddlewareDefinition } from './types';

const asked = defineHold({ kind: 'asked', question: ({ q }) => q, data: z.object({ q: z.string() }), decision: z.object({ answer: z.string() }) });
const other = defineHold({ ...asked, kind: 'other' });
const definition = { name: 'gate', description: '', configSchema: z.object({}), holds: [asked, other], create: () => ({}) } satisfies MiddlewareDefinition;
const stage = { name: 'gate', index: 2, holds: holdKinds(definition) };

describe('raiseHold', () => {
  it('raises the first declared kind by default, another when named (recorded as named)', () => {
    const first = raiseHold(stage, { q: 'why?' });
    expect(first).toMatchObject({ kind: 'asked', raisedBy: 'gate', stage: 2, data: { q: 'why?' }, kindNamed: false });
    expect(raiseHold(stage, { q: 'why?' }, 'other')).toMatchObject({ kind: 'other', kindNamed: true });
  });

  it('refuses a kind the middleware does not declare, and data that does not fit, naming both', () => {
    expect(() => raiseHold(stage, { q: 'why?' }, 'nope')).toThrow(
      'middleware "gate" raised a hold of kind "nope", which it does not declare (it declares: asked, other)',
    );
    expect(() => raiseHold(stage, { q: 3 })).toThrow(/middleware "gate" raised a hold of kind "asked" whose data does not fit its schema: .*q/);
  });

  it('gives a middleware that declares nothing one kind of its own name, taking any data', () => {
    const bare = { name: 'bare', index: 0, holds: holdKinds({ ...definition, name: 'bare', holds: undefined }) };
    expect(raiseHold(bare, { anything: [1] })).toMatchObject({ kind: 'bare', data: { anything: [1] } });
  });
});
