/**
 * keel agents as the AI SDK's chat endpoint (docs/chat.md): a page using `useChat` from
 * `@ai-sdk/react` (or the `Chat` class of `ai`) with `api: '/api/chat/<agent>'` talks to a
 * durable keel agent. The chat id is a session of the agent (`session: 'server'`), each message
 * the page sends is a turn (a run of the session), and the answer is the UI message stream the AI
 * SDK reads (made with the AI SDK's own helpers), built from the run's events: its text as the
 * model writes it, its tool calls and results, and its holds as tool approval requests.
 *
 * Nothing is kept here: the run is the record. The assistant message of a turn has the turn's
 * run id as its id; a page that reconnects (`GET /api/chat/<agent>/<chatId>/stream`, the AI SDK's
 * resume) is sent that message again from its start, which the AI SDK replaces in place, and then
 * the rest as it comes, so a reload shows the text with no gap and no repeat. An approval the
 * page answers comes back as the page's next request (the assistant message with the tool part
 * `approval-responded`) and decides the hold; the answer goes on from where the page was. A turn
 * runs on with no page open. Node side.
 */
import type { UIMessageChunk } from 'ai';
import { z } from 'zod';
import type { KeelClient, RunHandle } from '../client/keel-client';
import type { RunEvent } from '../client/run-events';
import { KeelError, toKeelError } from '../core/errors';
import type { Decision } from '../core/holds';
import { messageText, type Message } from '../core/messages';
import type { Hold, RunLifecycle } from '../core/run';
import { describeZodError } from '../core/schema-errors';
import { httpStatusOf } from '../core/status';
import { sessionOfRun, type Snapshot } from '../core/session';
import { noSuchSession, OPEN_ACCESS, type Access } from '../security/access';
import { requireOptional } from '../node/require-ts';
import type { ExposedAgent } from './exposed-agents';

/** Loads the AI SDK (an optional peer dependency), saying how to install it when it is missing. */
const aiSdk = (): typeof import('ai') => requireOptional<typeof import('ai')>('ai', '', 'serving the AI SDK chat protocol');

/** Refuses (FAILED_PRECONDITION, saying how to install it) when the AI SDK is not installed. */
export function assertChatServable(): void {
  aiSdk();
}

/** A part of a UI message, as the page sends it: what keel reads of it. */
const UiPartSchema = z
  .object({
    type: z.string().min(1),
    text: z.string().optional(),
    toolCallId: z.string().optional(),
    state: z.string().optional(),
    approval: z.object({ id: z.string().min(1), approved: z.boolean().optional(), reason: z.string().optional() }).optional(),
  })
  .loose();

const UiMessageSchema = z.object({ id: z.string(), role: z.enum(['user', 'assistant', 'system']), parts: z.array(UiPartSchema) }).loose();

/** The body `useChat` sends: the chat's id, its messages, and why it sends them. */
export const ChatRequestSchema = z
  .object({
    id: z.string().min(1),
    messages: z.array(UiMessageSchema).min(1),
    trigger: z.enum(['submit-message', 'regenerate-message']).default('submit-message'),
    messageId: z.string().optional(),
  })
  .loose();
export type ChatRequest = z.infer<typeof ChatRequestSchema>;
type UiMessage = z.infer<typeof UiMessageSchema>;

/** A UI message as the history endpoint gives it (what `useChat`'s `messages` takes). */
export interface ChatMessage {
  id: string;
  role: 'user' | 'assistant';
  parts: Array<Record<string, unknown>>;
}

/** A refusal: the status, and one line saying what was wrong. */
class ChatRefusal extends KeelError {}

const refuse = (status: 'INVALID_ARGUMENT' | 'NOT_FOUND' | 'FAILED_PRECONDITION', message: string): never => {
  throw new ChatRefusal(status, message);
};

/** The id a tool call has in the page: its ref in the model's message, else its place there. */
const toolCallIdOf = (name: string, ref: string | undefined, index: number, part: number): string => ref ?? `${name}-${index}-${part}`;

/**
 * Where a turn's assistant message starts in its run's messages: after `history` messages of the
 * session (system prompts aside) and the one the turn was sent; or at message index `from` (the
 * messages before it the page already shows).
 */
export type TurnStart = { history: number } | { from: number };

/**
 * Turns a run's events into the chunks of its turn's assistant message. Messages before the
 * turn's start make no chunks; text is taken from the model's message once it lands, less what
 * was streamed of it, so none is said twice.
 */
export class TurnChunks {
  private stepOpen = false;
  private text: { id: string; shown: string } | undefined;
  private texts = 0;
  /** The page's tool call ids, by tool name and ref (a hold names its call by these). */
  private readonly calls = new Map<string, string>();

  /** Messages of the run seen so far that are not system prompts. */
  private kept = 0;

  constructor(
    private readonly start: TurnStart,
    /** Tool calls the page denied: their results are said as denied. */
    private readonly denied: ReadonlySet<string> = new Set(),
  ) {}

  /** The chunks `event` makes. */
  take(event: RunEvent): UIMessageChunk[] {
    if (event.type === 'text') return event.final ? [] : this.streamed(event.delta);
    if (event.type !== 'message') return [];
    // Counted as they come (in order from the first): the turn starts after the history and its own message.
    const position = event.message.role === 'system' ? -1 : this.kept++;
    const shown = 'from' in this.start ? event.index >= this.start.from : position > this.start.history;
    return shown ? this.message(event.index, event.message) : [];
  }

  /** The chunks that ask the page about `holds`, the run's holds now. */
  holds(holds: readonly Hold[]): UIMessageChunk[] {
    return holds.map((hold): UIMessageChunk => {
      const toolCallId = hold.toolName && !hold.path?.length ? this.calls.get(`${hold.toolName}/${hold.ref ?? ''}`) : undefined;
      if (toolCallId) return { type: 'tool-approval-request', approvalId: hold.id, toolCallId };
      return { type: 'data-hold', id: hold.id, data: { ...hold } };
    });
  }

  /** The chunks that close the message: the open step, and why it ended. */
  end(state: RunLifecycle | 'waiting', failure?: string): UIMessageChunk[] {
    const closing = [...this.closeText(), ...this.closeStep()];
    if (failure !== undefined) return [...closing, { type: 'error', errorText: failure }];
    const finishReason = state === 'completed' ? 'stop' : state === 'waiting' ? 'tool-calls' : 'other';
    return [...closing, { type: 'finish', finishReason }];
  }

  private openStep(): UIMessageChunk[] {
    if (this.stepOpen) return [];
    this.stepOpen = true;
    return [{ type: 'start-step' }];
  }

  private closeStep(): UIMessageChunk[] {
    if (!this.stepOpen) return [];
    this.stepOpen = false;
    return [{ type: 'finish-step' }];
  }

  private closeText(): UIMessageChunk[] {
    if (!this.text) return [];
    const { id } = this.text;
    this.text = undefined;
    return [{ type: 'text-end', id }];
  }

  private streamed(delta: string): UIMessageChunk[] {
    if (!delta) return [];
    const chunks = this.openStep();
    if (!this.text) {
      this.text = { id: `text-${this.texts++}`, shown: '' };
      chunks.push({ type: 'text-start', id: this.text.id });
    }
    this.text.shown += delta;
    chunks.push({ type: 'text-delta', id: this.text.id, delta });
    return chunks;
  }

  private message(index: number, message: Message): UIMessageChunk[] {
    if (message.role === 'model') {
      const text = messageText(message);
      const shown = this.text?.shown ?? '';
      // A retried call may have streamed text its answer does not keep: the answer's rest goes on from what the page has.
      const chunks = [...this.streamed(text.startsWith(shown) ? text.slice(shown.length) : ''), ...this.closeText()];
      message.content.forEach((part, place) => {
        if (!('toolRequest' in part)) return;
        const { name, ref, input } = part.toolRequest;
        const toolCallId = toolCallIdOf(name, ref, index, place);
        this.calls.set(`${name}/${ref ?? ''}`, toolCallId);
        chunks.push(...this.openStep(), { type: 'tool-input-available', toolCallId, toolName: name, input: input ?? {} });
      });
      if (!message.content.some((part) => 'toolRequest' in part)) chunks.push(...this.closeStep());
      return chunks;
    }
    if (message.role === 'tool') {
      const chunks: UIMessageChunk[] = [];
      for (const part of message.content) {
        if (!('toolResponse' in part)) continue;
        const { name, ref, output } = part.toolResponse;
        const toolCallId = this.calls.get(`${name}/${ref ?? ''}`) ?? toolCallIdOf(name, ref, index, 0);
        chunks.push(
          this.denied.has(toolCallId) ? { type: 'tool-output-denied', toolCallId } : { type: 'tool-output-available', toolCallId, output: output ?? null },
        );
      }
      return [...chunks, ...this.closeStep()];
    }
    return [];
  }
}

/** The messages of a run before its turn: the session's history (system prompts aside) and the message the turn was sent. */
function turnStart(messages: readonly Message[], historyLength: number): number {
  let kept = 0;
  for (let index = 0; index < messages.length; index++) {
    if (messages[index]!.role === 'system') continue;
    if (kept++ === historyLength) return index + 1;
  }
  return messages.length;
}

/** Who decides what the page answers: the decision as the server records it (the verified identity with its proof, or the chat's name). */
export type Decider = (runId: string, decision: Decision) => Decision;

/** What serving chat needs. */
export interface ChatServeOptions {
  client: KeelClient;
  agents: readonly ExposedAgent[];
}

/** The answer for a failure: its status as HTTP status, and its one line. */
function failure(error: unknown): Response {
  const keel = toKeelError(error);
  return Response.json({ error: { status: keel.status, message: keel.message } }, { status: httpStatusOf(keel.status) });
}

/** The pending holds an assistant message from the page answers: each tool part it approved or denied. */
function answersOf(message: UiMessage) {
  return message.parts.flatMap((part) =>
    part.state === 'approval-responded' && part.approval?.approved !== undefined && part.toolCallId
      ? [{ interruptId: part.approval.id, approved: part.approval.approved, toolCallId: part.toolCallId, reason: part.approval.reason }]
      : [],
  );
}

/** The index of the latest model message of `messages` that asked for one of `toolCallIds` (-1: none). */
function askedFor(messages: readonly Message[], toolCallIds: readonly string[]): number {
  // The latest: a ref ("call-1") may name a call of an earlier turn too.
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index]!;
    const asks = message.content.some(
      (part, place) => 'toolRequest' in part && toolCallIds.includes(toolCallIdOf(part.toolRequest.name, part.toolRequest.ref, index, place)),
    );
    if (message.role === 'model' && asks) return index;
  }
  return -1;
}

/** Serves the AI SDK's chat protocol for the exposed agents: the routes' answers (`send`, `resume`, `history`) and `close`. */
export class ChatEndpoint {
  private readonly byName: ReadonlyMap<string, ExposedAgent>;
  /** The streams open now: each one's stop, and its end. */
  private readonly open = new Map<AbortController, Promise<void>>();
  private readonly ai = aiSdk();
  private readonly client: KeelClient;

  constructor({ client, agents }: ChatServeOptions) {
    this.client = client;
    this.byName = new Map(agents.map((agent) => [agent.name, agent]));
  }

  /** `POST /api/chat/<agent>`: a user message starts a turn; an assistant message answers its approvals. Either streams the answer. */
  async send(agentName: string, request: Request, decider: Decider, access: Access = OPEN_ACCESS): Promise<Response> {
    let chatId: string | undefined;
    try {
      const agent = this.chatAgent(agentName);
      const chat = await chatRequest(request);
      chatId = chat.id;
      const last = chat.messages.at(-1)!;
      if (last.role === 'assistant') return await this.approve(agent, chat.id, last, { decider, access, signal: request.signal });
      if (last.role !== 'user')
        return refuse('INVALID_ARGUMENT', `messages[${chat.messages.length - 1}]: the last message is a ${last.role} message; send a user message`);
      const text = last.parts.flatMap((part) => (part.type === 'text' && part.text ? [part.text] : [])).join('\n');
      if (!text.trim()) return refuse('INVALID_ARGUMENT', `messages[${chat.messages.length - 1}]: the user message has no text part`);
      // The page's message id makes the send idempotent: a page that sends the same message again gets the same turn.
      // Whose chat it is comes from the verified identity: a chat of another's answers as one that does not exist.
      const ifBelongsTo = await access.session(this.client.temporal, agent.name, chat.id, 'steer');
      const session = this.client.session(agent.name, chat.id, access.principal);
      const turn = await session.send(text, { detach: true, requestId: `chat-${last.id}`, ...(ifBelongsTo ? { ifBelongsTo } : {}) });
      const history = await this.historyOf(agent.name, chat.id, await session.snapshot(turn.snapshotId));
      return this.stream(turn.runId, { history }, { signal: request.signal });
    } catch (error) {
      return failure(chatId === undefined ? error : chatNotFound(error, agentName, chatId));
    }
  }

  /** `GET /api/chat/<agent>/<chatId>/stream`: the whole message of the turn under way again (the AI SDK replaces what it showed), then the rest; 204 when none is. */
  async resume(agentName: string, chatId: string, request: Request, access: Access = OPEN_ACCESS): Promise<Response> {
    try {
      const agent = this.chatAgent(agentName);
      await access.session(this.client.temporal, agent.name, chatId, 'read');
      const latest = await this.client.session(agent.name, chatId).snapshot();
      if (latest.status !== 'pending' && latest.status !== 'aborting') return new Response(null, { status: 204 });
      return this.stream(latest.runId, { history: await this.historyOf(agent.name, chatId, latest) }, { signal: request.signal });
    } catch (error) {
      return failure(chatNotFound(error, agentName, chatId));
    }
  }

  /** `GET /api/chat/<agent>/<chatId>`: the chat's messages, and the run of the turn under way, if one is. */
  async history(agentName: string, chatId: string, access: Access = OPEN_ACCESS): Promise<Response> {
    try {
      const agent = this.chatAgent(agentName);
      await access.session(this.client.temporal, agent.name, chatId, 'read');
      const latest = await this.client.session(agent.name, chatId).snapshot();
      const running = latest.status === 'pending' || latest.status === 'aborting';
      const messages = running ? await this.startedTurn(latest.runId, latest.messageCount) : await this.client.getHandle(latest.runId).messages();
      // A turn under way is the stream's to show: its history ends with the message it was sent.
      const shown = running ? messages.slice(0, turnStart(messages, latest.messageCount)) : messages;
      return Response.json({ chatId, messages: chatMessages(shown), ...(running ? { streaming: latest.runId } : {}) });
    } catch (error) {
      return failure(chatNotFound(error, agentName, chatId));
    }
  }

  /** Ends every stream still open, once each has let go of the client. */
  async close(): Promise<void> {
    const ends = [...this.open.values()];
    for (const stop of this.open.keys()) stop.abort();
    await Promise.all(ends);
  }

  /** The agent a chat is with: exposed, and keeping its conversation (a chat id is one of its sessions). */
  private chatAgent(name: string): ExposedAgent {
    const agent = this.byName.get(name);
    if (!agent) return refuse('NOT_FOUND', `no chat agent "${name}" here (serve.agents names the agents served)`);
    if (agent.session !== 'server')
      return refuse(
        'FAILED_PRECONDITION',
        `agent "${name}" keeps no conversation between runs (session: 'client'); a chat is a session: give it session: 'server'`,
      );
    return agent;
  }

  /** How many messages of the session's history the turn `snapshot` records started from. */
  private async historyOf(agent: string, chatId: string, snapshot: Snapshot): Promise<number> {
    // A turn under way records the history it started from; a settled one, where it left it, so its start is where the one before left it.
    if (snapshot.status === 'pending' || snapshot.status === 'aborting') return snapshot.messageCount;
    return snapshot.parentId ? (await this.client.session(agent, chatId).snapshot(snapshot.parentId)).messageCount : 0;
  }

  /**
   * The messages of a turn's run once they hold the history it started from and its own message:
   * a run that has just started answers with none until its first task has run (at most 5 s).
   */
  private async startedTurn(runId: string, history: number): Promise<Message[]> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const messages = await this.client.getHandle(runId).messages();
      if (messages.filter((message) => message.role !== 'system').length > history || Date.now() > deadline) return messages;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** The UI message stream of a run's turn from `start` on, until it ends or waits for a decision. */
  private stream(runId: string, start: TurnStart, { signal, denied }: { signal: AbortSignal; denied?: ReadonlySet<string> }): Response {
    const { createUIMessageStream, createUIMessageStreamResponse } = this.ai;
    return createUIMessageStreamResponse({
      keepAliveMs: 15_000,
      stream: createUIMessageStream({
        onError: (error) => toKeelError(error).message,
        execute: ({ writer }) => this.follow(runId, new TurnChunks(start, denied), signal, (chunk) => writer.write(chunk)),
      }),
    });
  }

  /** Writes the chunks of `runId`'s events until its turn ends or waits, or the page goes (`signal`), or the endpoint closes. */
  private async follow(runId: string, chunks: TurnChunks, signal: AbortSignal, write: (chunk: UIMessageChunk) => void): Promise<void> {
    const handle: RunHandle = this.client.getHandle(runId);
    write({ type: 'start', messageId: runId });
    const stop = new AbortController();
    const quit = () => stop.abort();
    signal.addEventListener('abort', quit);
    let ended!: () => void;
    this.open.set(stop, new Promise<void>((resolve) => (ended = resolve)));
    try {
      for await (const event of handle.events({ signal: stop.signal })) {
        chunks.take(event).forEach(write);
        if (event.type === 'hold') {
          // Every hold the run waits on now, then the message ends: the page answers, and its answer goes on with the run.
          const { interrupts } = await handle.status();
          [...chunks.holds(interrupts), ...chunks.end('waiting')].forEach(write);
          return;
        }
        if (event.type === 'end') {
          const failed = event.state === 'completed' ? undefined : await failureOf(handle, event.state);
          chunks.end(event.state, failed).forEach(write);
          return;
        }
      }
    } finally {
      signal.removeEventListener('abort', quit);
      stop.abort();
      this.open.delete(stop);
      ended();
    }
  }

  /** Decides the holds the page answered, then streams the rest of the turn from what the page has. */
  private async approve(
    agent: ExposedAgent,
    chatId: string,
    message: UiMessage,
    { decider, access, signal }: { decider: Decider; access: Access; signal: AbortSignal },
  ): Promise<Response> {
    const runId = message.id;
    if (sessionOfRun(runId, agent.name)?.sessionId !== chatId)
      return refuse('INVALID_ARGUMENT', `the last message is an assistant message (${runId}) that is not a turn of chat ${chatId}; send a user message`);
    // A turn of another's chat is decided by no one who may not decide it; it answers as a chat that does not exist.
    await access.check(this.client.temporal, runId, 'decide').catch((error: unknown) => {
      throw toKeelError(error).status === 'NOT_FOUND' ? noSuchSession(agent.name, chatId) : error;
    });
    const given = answersOf(message);
    if (!given.length)
      return refuse('INVALID_ARGUMENT', `the assistant message ${runId} answers no approval: send a user message, or approve or deny a tool call`);
    const handle = this.client.getHandle(runId);
    const [status, messages] = await Promise.all([handle.status(), handle.messages()]);
    const pending = new Set(status.interrupts.map((hold) => hold.id));
    const denied = new Set<string>();
    for (const answer of given) {
      if (!pending.has(answer.interruptId)) continue; // decided already (the page sent it twice, or another decider was first)
      try {
        const decision = decider(runId, { interruptId: answer.interruptId, approved: answer.approved, ...(answer.reason ? { reason: answer.reason } : {}) });
        await handle.decide(decision, { timeoutMs: 15_000 });
      } catch (error) {
        // Another decision was taken first (the same page twice, or another decider): the run's answer shows which.
        if (toKeelError(error).status === 'FAILED_PRECONDITION' && toKeelError(error).message.includes('already decided')) continue;
        throw error;
      }
      if (!answer.approved) denied.add(answer.toolCallId);
    }
    // The page has the turn up to the model message that asked for the calls it answered: the rest goes on from there
    // (read from the run's messages, not its count now, which a decision sent at the same moment may have moved on).
    const asked = askedFor(
      messages,
      given.map((answer) => answer.toolCallId),
    );
    return this.stream(runId, { from: asked >= 0 ? asked + 1 : status.messageCount }, { signal, denied });
  }
}

/** The chat a request sends, checked: JSON of the AI SDK's shape, and a message to send (a regenerate is refused). */
async function chatRequest(request: Request): Promise<ChatRequest> {
  if (!(request.headers.get('content-type') ?? '').startsWith('application/json')) refuse('INVALID_ARGUMENT', 'send the chat as application/json');
  let body: unknown;
  try {
    body = await request.json();
  } catch (error) {
    return refuse('INVALID_ARGUMENT', `the body is not JSON: ${(error as Error).message}`);
  }
  const parsed = ChatRequestSchema.safeParse(body);
  if (!parsed.success) return refuse('INVALID_ARGUMENT', `malformed chat request: ${describeZodError(parsed.error)}`);
  if (parsed.data.trigger === 'regenerate-message')
    refuse('INVALID_ARGUMENT', 'a keel chat keeps every turn it ran: send a new message instead of regenerating one');
  return parsed.data;
}

/** A session that does not exist is an unknown chat. */
function chatNotFound(error: unknown, agent: string, chatId: string): unknown {
  const keel = toKeelError(error);
  return keel.status === 'NOT_FOUND' && !(error instanceof ChatRefusal) ? new KeelError('NOT_FOUND', `no chat "${chatId}" with agent "${agent}"`) : error;
}

/** Why a run that did not complete ended, in one line. */
async function failureOf(handle: RunHandle, state: RunLifecycle): Promise<string> {
  try {
    await handle.result();
    return `the run ended ${state}`;
  } catch (error) {
    return toKeelError(error).message;
  }
}

/** A conversation as UI messages: a user message each, and each answer (the model's messages and its tools' results) one assistant message. */
export function chatMessages(messages: readonly Message[]): ChatMessage[] {
  const shown: ChatMessage[] = [];
  let answer: ChatMessage | undefined;
  const results = new Map<string, Record<string, unknown>>();
  messages.forEach((message, index) => {
    if (message.role === 'system') return;
    if (message.role === 'user') {
      answer = undefined;
      const text = messageText(message);
      if (text) shown.push({ id: `m${index}`, role: 'user', parts: [{ type: 'text', text }] });
      return;
    }
    if (!answer) shown.push((answer = { id: `m${index}`, role: 'assistant', parts: [] }));
    if (message.role === 'model') {
      answer.parts.push({ type: 'step-start' });
      const text = messageText(message);
      if (text) answer.parts.push({ type: 'text', text, state: 'done' });
      message.content.forEach((part, place) => {
        if (!('toolRequest' in part)) return;
        const { name, ref, input } = part.toolRequest;
        const tool: Record<string, unknown> = {
          type: `tool-${name}`,
          toolCallId: toolCallIdOf(name, ref, index, place),
          state: 'input-available',
          input: input ?? {},
        };
        results.set(`${name}/${ref ?? ''}`, tool);
        answer!.parts.push(tool);
      });
    } else if (message.role === 'tool') {
      for (const part of message.content) {
        if (!('toolResponse' in part)) continue;
        const tool = results.get(`${part.toolResponse.name}/${part.toolResponse.ref ?? ''}`);
        if (tool) Object.assign(tool, { state: 'output-available', output: part.toolResponse.output ?? null });
      }
    }
  });
  return shown;
}
