/**
 * A Chat Completions server on loopback for the rate-limit tests: answers `ok` after `delayMs`,
 * or 429 (Retry-After: 1) while `throttle()` says so, and counts the calls in flight, the most
 * ever in flight, and the calls whose caller went away before the answer (a killed worker).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeChatProvider {
  state: { inFlight: number; maxInFlight: number; answered: number; abandoned: number; throttled: number; delayMs: number; throttle: () => boolean };
  /** Listens on 127.0.0.1 and a free port; resolves to the base URL (`.../v1`). */
  listen: () => Promise<string>;
  close: () => Promise<void>;
}

export function fakeChatProvider(): FakeChatProvider {
  const state: FakeChatProvider['state'] = { inFlight: 0, maxInFlight: 0, answered: 0, abandoned: 0, throttled: 0, delayMs: 150, throttle: () => false };
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      if (state.throttle()) {
        state.throttled += 1;
        response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
        response.end(JSON.stringify({ error: { message: 'rate limit reached' } }));
        return;
      }
      state.inFlight += 1;
      state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
      let done = false;
      const timer = setTimeout(() => {
        done = true;
        state.inFlight -= 1;
        state.answered += 1;
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            choices: [{ message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 1000, completion_tokens: 10, total_tokens: 1010 },
          }),
        );
      }, state.delayMs);
      // The caller went away (its process was killed): the call is no longer in flight.
      response.on('close', () => {
        if (done) return;
        clearTimeout(timer);
        state.inFlight -= 1;
        state.abandoned += 1;
      });
    });
  });
  return {
    state,
    listen: async () => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
