/**
 * keel agents over the AI SDK's chat protocol (docs/chat.md), read with the AI SDK's own client
 * parts (`DefaultChatTransport`, `readUIMessageStream`): a chat is a session, each message a
 * turn streamed as a UI message whose id is the turn's run; a dropped connection resumes with the
 * whole message again (no gap, no repeat) while the turn runs on; a hold is a tool approval the
 * page answers through the same endpoint, which runs the held call once or never; bad input is
 * refused in one line and changes nothing; a page of another origin is refused unless named.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../src/config/load';
import { Registry } from '../src/registry';
import { startUiServer, type UiServer } from '../src/ui/server';
import * as agents from './fixtures/chat-agents';
import { startTestWorker, type TestWorker } from './support/harness';
import { ROOT } from './support/processes';

const testDir = mkdtempSync(join(tmpdir(), 'keel-chat-'));
process.env.KEEL_TEST_DIR = testDir;
process.env.KEEL_CHAT_CHUNK_MS = '60';
const TRUSTED = 'http://app.example.test:3000';

let worker: TestWorker;
let ui: UiServer;

beforeAll(async () => {
  worker = await startTestWorker(new Registry().addModuleExports(agents), { worker: { maxHeartbeatThrottleInterval: '100 milliseconds' } });
  const config = parseConfig(
    {
      temporal: { address: inject('temporalAddress') },
      taskQueue: worker.taskQueue,
      server: { enabled: false },
      modules: ['test/fixtures/chat-agents.ts'],
      serve: { agents: ['chat-writer', 'chat-booker', 'chat-once'], origins: [TRUSTED] },
    },
    { baseDir: ROOT, env: {} },
  );
  ui = await startUiServer({ config, port: 0, token: undefined });
});
afterAll(async () => {
  await ui?.close();
  await worker?.stop();
});

const transport = (agent: string) => new DefaultChatTransport({ api: `${ui.origin}/api/chat/${agent}` });
const userMessage = (text: string, id = `u-${Math.random().toString(36).slice(2)}`): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] });
const chatId = () => `chat-${Math.random().toString(36).slice(2)}`;

/** The message a stream of chunks makes (continuing `message`), and the chunks it was made of. */
async function read(stream: ReadableStream<UIMessageChunk>, message?: UIMessage): Promise<{ message: UIMessage; chunks: UIMessageChunk[] }> {
  const chunks: UIMessageChunk[] = [];
  const tee = stream.pipeThrough(
    new TransformStream<UIMessageChunk, UIMessageChunk>({
      transform(chunk, controller) {
        chunks.push(chunk);
        controller.enqueue(chunk);
      },
    }),
  );
  let last: UIMessage | undefined;
  for await (const snapshot of readUIMessageStream({ stream: tee, ...(message ? { message } : {}), terminateOnError: true })) last = snapshot;
  return { message: last!, chunks };
}

const textOf = (message: UIMessage) => message.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
const linesOf = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
const bookingsOf = (runId: string) => linesOf(join(testDir, 'booked.log')).filter((line) => line.startsWith(`${runId} `)).length;

describe('chat turns', () => {
  it('streams a turn as a UI message whose id is its run, in pieces, and the next message continues the session', async () => {
    const id = chatId();
    const messages = [userMessage('hello')];
    const first = await read(
      await transport('chat-writer').sendMessages({ chatId: id, messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined }),
    );
    expect(first.message.id).toBe(`session/chat-writer/${id}/run-1`);
    expect(textOf(first.message)).toBe(agents.answerWords(1).join(' '));
    expect(first.chunks.filter((chunk) => chunk.type === 'text-delta').length).toBeGreaterThan(3);
    expect(first.chunks.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });

    messages.push(first.message, userMessage('again'));
    const second = await read(
      await transport('chat-writer').sendMessages({ chatId: id, messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined }),
    );
    expect(second.message.id).toBe(`session/chat-writer/${id}/run-2`);
    expect(textOf(second.message)).toBe(agents.answerWords(2).join(' '));

    // The chat's history, as a reloaded page loads it.
    const history = (await (await fetch(`${ui.origin}/api/chat/chat-writer/${id}`)).json()) as { messages: UIMessage[] };
    expect(history.messages.map((message) => [message.role, textOf(message)])).toEqual([
      ['user', 'hello'],
      ['assistant', agents.answerWords(1).join(' ')],
      ['user', 'again'],
      ['assistant', agents.answerWords(2).join(' ')],
    ]);
  });

  it('sent twice (a page retrying), one message is one turn', async () => {
    const id = chatId();
    const message = userMessage('once', 'u-fixed');
    const send = () =>
      transport('chat-writer').sendMessages({ chatId: id, messages: [message], trigger: 'submit-message', messageId: undefined, abortSignal: undefined });
    const [a, b] = await Promise.all([send().then(read), send().then(read)]);
    expect(a.message.id).toBe(`session/chat-writer/${id}/run-1`);
    expect(b.message.id).toBe(a.message.id);
    expect(textOf(b.message)).toBe(textOf(a.message));
  });
});

describe('resume', () => {
  it('a page that drops mid-answer reattaches: the whole message again, then the rest, with no gap and no repeat; the turn ran on alone', async () => {
    const id = chatId();
    const drop = new AbortController();
    const stream = await transport('chat-writer').sendMessages({
      chatId: id,
      messages: [userMessage('hi')],
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: drop.signal,
    });
    // Read until some text arrived, then the connection goes.
    const reader = stream.getReader();
    let seen = '';
    while (!seen.includes('w1.5')) {
      const { value, done } = await reader.read();
      if (done) throw new Error('the stream ended before the drop');
      if (value.type === 'text-delta') seen += value.delta;
    }
    drop.abort();
    await reader.cancel().catch(() => undefined);

    const resumed = await transport('chat-writer').reconnectToStream({ chatId: id });
    expect(resumed).not.toBeNull();
    const { message } = await read(resumed!);
    expect(message.id).toBe(`session/chat-writer/${id}/run-1`);
    expect(textOf(message)).toBe(agents.answerWords(1).join(' '));
    expect(textOf(message).startsWith(seen)).toBe(true);

    // Ended: nothing to resume (204), and the history has the whole answer.
    expect(await transport('chat-writer').reconnectToStream({ chatId: id })).toBeNull();
  });

  it('an unknown chat id is refused in one line', async () => {
    const started = Date.now();
    const response = await fetch(`${ui.origin}/api/chat/chat-writer/no-such-chat/stream`);
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe('no chat "no-such-chat" with agent "chat-writer"');
    expect(Date.now() - started).toBeLessThan(1000);
    expect((await fetch(`${ui.origin}/api/chat/chat-writer/no-such-chat`)).status).toBe(404);
  });
});

describe('approvals', () => {
  /** Asks chat-booker for a train; returns the held message and the chat id. */
  async function held(to: string) {
    const id = chatId();
    const messages = [userMessage(`book a train to ${to}`)];
    const { message, chunks } = await read(
      await transport('chat-booker').sendMessages({ chatId: id, messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined }),
    );
    expect(chunks.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool-calls' });
    const tool = message.parts.find((part) => part.type === 'tool-book_train') as {
      state: string;
      approval?: { id: string };
      input: unknown;
      toolCallId: string;
    };
    expect(tool).toMatchObject({ state: 'approval-requested', input: { to } });
    return { id, messages, message, tool };
  }

  /** The held message with the page's answer, as `addToolApprovalResponse` leaves it. */
  const answered = (message: UIMessage, approved: boolean, reason?: string): UIMessage => ({
    ...message,
    parts: message.parts.map((part) =>
      part.type === 'tool-book_train' && part.state === 'approval-requested'
        ? ({ ...part, state: 'approval-responded', approval: { id: part.approval.id, approved, ...(reason ? { reason } : {}) } } as unknown as typeof part)
        : part,
    ),
  });

  it('approved in the page, the held call runs once and the answer goes on from where the page was; decidedBy names the chat', async () => {
    const { id, messages, message } = await held('Bergen');
    const approval = answered(message, true);
    const send = () =>
      transport('chat-booker').sendMessages({
        chatId: id,
        messages: [...messages, approval],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      });
    // Sent twice at once (a double click): the call runs once.
    const [rest, again] = await Promise.all([
      send().then((stream) => read(stream, structuredClone(approval))),
      send().then((stream) => read(stream, structuredClone(approval))),
    ]);
    for (const { message: done } of [rest, again]) {
      expect(done.id).toBe(message.id);
      expect(done.parts.find((part) => part.type === 'tool-book_train')).toMatchObject({ state: 'output-available', output: 'ticket to Bergen, seat 12' });
      expect(textOf(done)).toBe('done: "ticket to Bergen, seat 12"');
    }
    expect(bookingsOf(message.id)).toBe(1);
    const status = await worker.client.getHandle(message.id).status();
    expect(status.decisions?.map((decision) => decision.decidedBy)).toEqual(['chat:chat-booker']);
  });

  it('denied in the page, the held call never runs', async () => {
    const { id, messages, message } = await held('Narvik');
    const denial = answered(message, false, 'too far');
    const { message: done } = await read(
      await transport('chat-booker').sendMessages({
        chatId: id,
        messages: [...messages, denial],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      }),
      denial,
    );
    expect(done.parts.find((part) => part.type === 'tool-book_train')).toMatchObject({ state: 'output-denied' });
    expect(bookingsOf(message.id)).toBe(0);
  });

  it('a reloaded page resumes a waiting turn at its question', async () => {
    const { id, message } = await held('Tromsø');
    const { message: resumed } = await read((await transport('chat-booker').reconnectToStream({ chatId: id }))!);
    expect(resumed.id).toBe(message.id);
    expect(resumed.parts.find((part) => part.type === 'tool-book_train')).toMatchObject({ state: 'approval-requested' });
  });

  it('an approval for another chat, or with no answer, is refused and runs nothing', async () => {
    const { messages, message } = await held('Bodø');
    const post = (body: unknown) =>
      fetch(`${ui.origin}/api/chat/chat-booker`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const other = await post({ id: chatId(), messages: [...messages, answered(message, true)] });
    expect(other.status).toBe(400);
    expect(((await other.json()) as { error: { message: string } }).error.message).toMatch(/is not a turn of chat/);
    const none = await post({ id: message.id.split('/')[2], messages: [...messages, message] });
    expect(none.status).toBe(400);
    expect(((await none.json()) as { error: { message: string } }).error.message).toMatch(/answers no approval/);
    expect(bookingsOf(message.id)).toBe(0);
  });
});

describe('bad input and other origins', () => {
  const post = (agent: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${ui.origin}/api/chat/${agent}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const messageOf = async (response: Response) => ((await response.json()) as { error: { message: string } }).error.message;

  it('says what was wrong with a malformed chat in one line, at once', async () => {
    const started = Date.now();
    const cases: Array<[unknown, RegExp]> = [
      ['{not json', /^the body is not JSON/],
      [{ id: 'x' }, /^malformed chat request: messages: /],
      [{ id: 'x', messages: [{ id: 'm', role: 'robot', parts: [] }] }, /^malformed chat request: messages\[0\]\.role: /],
      [{ id: 'x', messages: [{ id: 'm', role: 'user', parts: [{ type: 'file', url: 'data:,' }] }] }, /^messages\[0\]: the user message has no text part$/],
      [{ id: 'x', messages: [userMessage('hi')], trigger: 'regenerate-message' }, /send a new message instead of regenerating/],
    ];
    for (const [body, expected] of cases) {
      const response = await post('chat-writer', body);
      expect(response.status).toBe(400);
      const message = await messageOf(response);
      expect(message).toMatch(expected);
      expect(message).not.toContain('\n');
    }
    expect(Date.now() - started).toBeLessThan(2000);
    const list = await worker.client.list({ agent: 'chat-writer', limit: 500 });
    expect(list.some((run) => run.runId.includes('/x/'))).toBe(false);
  });

  it('refuses an agent that keeps no session, and one not served', async () => {
    const once = await post('chat-once', { id: 'x', messages: [userMessage('hi')] });
    expect(once.status).toBe(409);
    expect(await messageOf(once)).toMatch(/keeps no conversation between runs/);
    const hidden = await post('no-such-agent', { id: 'x', messages: [userMessage('hi')] });
    expect(hidden.status).toBe(404);
  });

  it('refuses a page of another origin, and answers the one serve.origins names', async () => {
    const foreign = await post('chat-writer', { id: chatId(), messages: [userMessage('hi')] }, { origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    const preflight = (origin: string, path = '/api/chat/chat-writer') =>
      fetch(`${ui.origin}${path}`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      });
    expect((await preflight('http://evil.example')).headers.get('access-control-allow-origin')).toBeNull();
    expect((await preflight(TRUSTED)).headers.get('access-control-allow-origin')).toBe(TRUSTED);
    // Named for the chat only: the inbox and decisions stay the page's own.
    expect((await preflight(TRUSTED, '/api/inbox')).headers.get('access-control-allow-origin')).toBeNull();
    const decide = await fetch(`${ui.origin}/api/runs/x/decisions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: TRUSTED, 'x-keel-ui': '1' },
      body: '{}',
    });
    expect(decide.status).toBe(403);
    const trusted = await read(
      await new DefaultChatTransport({ api: `${ui.origin}/api/chat/chat-writer`, headers: { origin: TRUSTED } }).sendMessages({
        chatId: chatId(),
        messages: [userMessage('hi')],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      }),
    );
    expect(textOf(trusted.message)).toBe(agents.answerWords(1).join(' '));
  });
});
