import { describe, expect, it } from 'vitest';
import type { Message } from '../core/messages';
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
