import { describe, expect, it } from 'vitest';
import { applyForkEdits, conversationTurns, forkCut } from './fork';
import type { Message } from './messages';

const user = (text: string): Message => ({ role: 'user', content: [{ text }] });
const call = (name: string, ref = '0'): Message => ({ role: 'model', content: [{ toolRequest: { name, ref, input: {} } }] });
const result = (name: string, output: unknown, ref = '0'): Message => ({ role: 'tool', content: [{ toolResponse: { name, ref, output } }] });
const answer = (text: string): Message => ({ role: 'model', content: [{ text }] });

// Turns: 1 calls a, 2 calls b (a steering message came after it), 3 answers.
const conversation: Message[] = [
  { role: 'system', content: [{ text: 'sys' }] },
  user('go'),
  call('a'),
  result('a', 1),
  call('b'),
  result('b', 2),
  user('hurry'),
  answer('done'),
];

describe('fork points', () => {
  it('counts model replies as turns and keeps what came before the next reply, a steering message included', () => {
    expect(conversationTurns(conversation)).toBe(3);
    expect(forkCut(conversation, 0, 'r')).toEqual(conversation.slice(0, 2));
    expect(forkCut(conversation, 2, 'r')).toEqual(conversation.slice(0, 7));
    expect(forkCut(conversation, 3, 'r')).toEqual(conversation);
    expect(() => forkCut(conversation, 4, 'r')).toThrow('run r has 3 turns: fork at a turn from 0 to 3 (got 4)');
    expect(() => forkCut(conversation.slice(0, 5), 2, 'r')).toThrow(
      'turn 2 of run r has not finished its tool calls (2.0 b): fork at turn 1, or once they are decided',
    );
  });

  it('replaces the user message the kept conversation ends with, else adds one; changes a result by call id', () => {
    const atSteer = applyForkEdits(forkCut(conversation, 2, 'r'), { message: 'slowly' }, { runId: 'r', turn: 2 });
    expect(atSteer.messages.at(-1)).toEqual(user('slowly'));
    expect(atSteer.messages).toHaveLength(7);
    const atOne = applyForkEdits(forkCut(conversation, 1, 'r'), { message: 'more', toolResults: { '1.0': 5 } }, { runId: 'r', turn: 1 });
    expect(atOne.messages.slice(-2)).toEqual([result('a', 5), user('more')]);
    expect(atOne.changed).toEqual([{ id: '1.0', toolName: 'a', output: 5 }]);
    // The source's messages are not changed.
    expect(conversation[3]).toEqual(result('a', 1));
    expect(() => applyForkEdits(conversation, {}, { runId: 'r', turn: 3 })).toThrow('turn 3 of run r is its answer: give a message');
    expect(() => applyForkEdits(forkCut(conversation, 1, 'r'), { toolResults: { '2.0': 1 } }, { runId: 'r', turn: 1 })).toThrow(
      '--tool-result 2.0: no finished tool call "2.0" before turn 2 of run r; calls there: 1.0 (a)',
    );
  });
});
