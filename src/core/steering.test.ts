import { describe, expect, it } from 'vitest';
import { MAX_STEER_CHARS, SteerInputSchema, steerInputProblem } from './steering';

describe('steer input', () => {
  it('takes a text, and interrupt', () => {
    expect(SteerInputSchema.parse({ text: 'hurry', interrupt: true })).toEqual({ text: 'hurry', interrupt: true });
    expect(steerInputProblem({ text: 'hurry' })).toBeUndefined();
  });

  it('says what is wrong: an empty or blank text, a missing one, one too long, an unknown field', () => {
    expect(steerInputProblem({ text: '' })).toBe('invalid steer: text: must not be empty');
    expect(steerInputProblem({ text: ' \n ' })).toBe('invalid steer: text: must not be empty');
    expect(steerInputProblem({})).toBe('invalid steer: text: Invalid input: expected string, received undefined');
    expect(steerInputProblem({ text: 'x'.repeat(MAX_STEER_CHARS + 1) })).toBe(`invalid steer: text: must be at most ${MAX_STEER_CHARS} characters`);
    expect(steerInputProblem({ text: 'x', id: 'mine' })).toBe('invalid steer: (root): Unrecognized key: "id"');
    expect(steerInputProblem({ text: 'x', interrupt: 'yes' })).toBe('invalid steer: interrupt: Invalid input: expected boolean, received string');
  });
});
