import { describe, expect, it } from 'vitest';
import { messageText, type Message } from '../core/messages';
import type { RunStatus } from '../core/run';
import { runEvents, type InFlight, type RunEvent, type RunEventSource } from './run-events';

/**
 * A handle whose one poll sees a tool call running (describe) and then reads messages that
 * already hold its result (the call ended between the two reads): the race that printed a
 * call's `⚙ runs on worker` line after its result. The run then ends.
 */
function racedHandle(): RunEventSource {
  const messages: Message[] = [
    { role: 'user', content: [{ text: 'weather?' }] },
    { role: 'model', content: [{ toolRequest: { name: 'lookup_weather', ref: '0', input: { city: 'Lisbon' } } }] },
    { role: 'tool', content: [{ toolResponse: { name: 'lookup_weather', ref: '0', output: { sky: 'sunny' } } }] },
  ];
  const inFlight: InFlight = {
    tools: [{ name: 'lookup_weather', ref: '0', activityId: '5', temporalRunId: 'r1', attempt: 1, worker: '7@host' }],
    history: 'r1/12',
  };
  const status = { state: 'running', messageCount: messages.length, tasks: [], interrupts: [] } as unknown as RunStatus;
  let polls = 0;
  return {
    result: () => new Promise((resolve) => setTimeout(resolve, 50)),
    inFlight: async () => (polls++ === 0 ? inFlight : { tools: [] }),
    reportedStatus: async () => status,
    status: async () => ({ ...status, state: 'completed' }),
    messages: async (from = 0) => messages.slice(from),
    tasks: async () => [],
  };
}

describe('runEvents', () => {
  it("says a tool call's attempt after the model's request for it and before its result, when one poll sees both", async () => {
    const events: RunEvent[] = [];
    for await (const event of runEvents(racedHandle(), { intervalMs: 10 })) events.push(event);
    const order = events.map((event) => (event.type === 'message' ? `message ${event.message.role}` : event.type));
    expect(order).toEqual(['message user', 'message model', 'toolCall', 'toolAttempt', 'message tool', 'toolResult', 'end']);
    expect(events.find((event) => event.type === 'toolAttempt')).toEqual({
      type: 'toolAttempt',
      name: 'lookup_weather',
      ref: '0',
      attempt: 1,
      worker: '7@host',
    });
  });
});

/** A run read poll by poll: each poll's streaming call (describe) and the messages the run holds then; it ends after the last. */
function polledHandle(polls: Array<{ text?: { text: string; model?: string; callIndex?: number; attempt?: number }; messages: Message[] }>): RunEventSource {
  let poll = -1;
  const at = () => polls[Math.min(poll, polls.length - 1)]!;
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  const status = () => ({ state: 'running', messageCount: at().messages.length, tasks: [], interrupts: [] }) as unknown as RunStatus;
  return {
    result: () => ended,
    inFlight: async () => {
      poll++;
      if (poll === polls.length) end();
      const text = poll < polls.length ? at().text : undefined;
      return { tools: [], history: `r/${poll}`, ...(text ? { text: { model: 'm', callIndex: 0, attempt: 1, sequence: poll, ...text } } : {}) };
    },
    reportedStatus: async () => status(),
    status: async () => ({ ...status(), state: 'completed' }),
    messages: async (from = 0) => at().messages.slice(from),
    tasks: async () => [],
  };
}

const said = async (handle: RunEventSource) => {
  const events: RunEvent[] = [];
  for await (const event of runEvents(handle, { intervalMs: 1 })) events.push(event);
  return events.flatMap((event) =>
    event.type === 'text'
      ? [`${event.final ? 'rest' : 'text'} ${event.delta}`]
      : event.type === 'message'
        ? [`${event.message.role} ${messageText(event.message)}`]
        : [],
  );
};
const user = (text: string): Message => ({ role: 'user', content: [{ text }] });
const model = (text: string): Message => ({ role: 'model', content: [{ text }] });

describe('streamed text', () => {
  it("a session's history read after the turn's call began streaming leaves its text be: nothing twice, nothing lost", async () => {
    // The CI failure: the turn's first words came with the first read of the history, whose model message reset what was shown.
    const history = [user('hello'), model('w1.1 w1.2'), user('again')];
    const events = await said(
      polledHandle([
        { text: { text: 'w2.1', callIndex: 1 }, messages: history },
        { text: { text: 'w2.1 w2.2', callIndex: 1 }, messages: history },
        { messages: [...history, model('w2.1 w2.2 w2.3')] },
      ]),
    );
    expect(events).toEqual(['text w2.1', 'user hello', 'model w1.1 w1.2', 'user again', 'text  w2.2', 'rest  w2.3', 'model w2.1 w2.2 w2.3']);
  });

  it("a call that starts before the one before it is read answered comes after that answer's rest", async () => {
    const ask = [user('go')];
    const events = await said(
      polledHandle([
        { text: { text: 'first', callIndex: 0 }, messages: ask },
        { text: { text: 'sec', callIndex: 1 }, messages: [...ask, model('first one'), user('next')] },
        { messages: [...ask, model('first one'), user('next'), model('second')] },
      ]),
    );
    expect(events).toEqual(['text first', 'user go', 'rest  one', 'model first one', 'user next', 'text sec', 'rest ond', 'model second']);
  });

  it('a call whose answer is read with the answer before it is said once, by its answer', async () => {
    const ask = [user('go')];
    const events = await said(
      polledHandle([
        { text: { text: 'first', callIndex: 0 }, messages: ask },
        { text: { text: 'sec', callIndex: 1 }, messages: [...ask, model('first one'), model('second')] },
      ]),
    );
    expect(events).toEqual(['text first', 'user go', 'rest  one', 'model first one', 'rest second', 'model second']);
  });

  it('a call that failed without an answer and was called again (Retry): the text already shown is not shown twice', async () => {
    // The flaky CI run printed "HelloHello world": the second call's text shown whole after the first's.
    const ask = [user('hi')];
    const events = await said(
      polledHandle([
        { text: { text: 'Hello', callIndex: 0 }, messages: ask },
        { text: { text: 'Hello wor', callIndex: 1 }, messages: ask },
        { text: { text: 'Hello world', callIndex: 1 }, messages: ask },
        { messages: [...ask, model('Hello world')] },
      ]),
    );
    expect(events).toEqual(['text Hello', 'user hi', 'text  wor', 'text ld', 'model Hello world']);
  });

  it('a call called again after a failure that says something else shows its own text whole', async () => {
    const ask = [user('hi')];
    const events = await said(
      polledHandle([
        { text: { text: 'Hel', callIndex: 0 }, messages: ask },
        { text: { text: 'Sorry', callIndex: 1 }, messages: ask },
        { messages: [...ask, model('Sorry, again')] },
      ]),
    );
    expect(events).toEqual(['text Hel', 'user hi', 'text Sorry', 'rest , again', 'model Sorry, again']);
  });
});
