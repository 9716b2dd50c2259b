/**
 * Forks: a new run whose conversation is another run's up to a turn (docs/fork.md). What a
 * fork records of its source, where a turn ends in a conversation, and the edits a fork may
 * make there (the user's message, a recorded tool result). Turn N is the conversation's N-th
 * model reply; a fork at turn N holds everything before the model's reply N+1, so no tool
 * call of turns 1..N runs again. Pure: safe on both sides.
 */
import { z } from 'zod';
import { KeelError } from './errors';
import type { Message, Part } from './messages';
import { UsageSchema, addUsage, type Usage } from './usage';

/** What a fork records of where it came from (its input's `fork`, its status's `fork`, its memo). */
export const ForkOriginSchema = z
  .object({
    /** The run it was forked from (a run id). */
    source: z.string().min(1),
    /** The turn of the source it goes on after. */
    turn: z.number().int().min(0),
    /** What the conversation up to that turn spent, as the source counted it (not counted again: see docs/fork.md). */
    usage: UsageSchema.default({}),
  })
  .strict();
export type ForkOrigin = z.infer<typeof ForkOriginSchema>;

/** The memo key a fork's origin is kept under (read without a worker, by `keel status` and the UI). */
export const FORK_MEMO_KEY = 'keelFork';

/** What the `forkPoint` query answers: the run's turns, and what the conversation had spent when a turn ended. */
export interface ForkPoint {
  /** The run's agent. */
  agent: string;
  /** Model replies in the run's conversation so far. */
  turns: number;
  /** What the conversation had spent by the end of the turn asked for (with what a fork carried); absent when the run cannot tell. */
  usage?: z.infer<typeof UsageSchema>;
  /** The fork this run is (its source answers for turns before its own). */
  fork?: ForkOrigin;
  /** When asked for: the conversation a fork at the turn keeps (`forkCut`)... */
  conversation?: Message[];
  /** ...or why a fork there is refused (a turn past the end, a turn still held), in one line. */
  refusal?: string;
}

/** What the conversation had spent by a fork point: what the run's own fork carried, and the run's own spending there. */
export function carriedUsage(fork: ForkOrigin | undefined, spent: Usage): Usage {
  return addUsage(fork?.usage ?? {}, spent, 'the usage a fork carries');
}

/** The edits of a fork at its turn. */
export interface ForkEdits {
  /** A user message: it replaces the user's message at the fork point when the conversation ends with one, else it is added. */
  message?: string;
  /** Tool results to change, by call id (`<turn>.<ref>`: the call `ref` of turn `turn`). */
  toolResults?: Record<string, unknown>;
}

/** A tool call of a conversation: its id (`<turn>.<ref>`), tool and input, and where its result is. */
export interface ForkCall {
  id: string;
  toolName: string;
  input: unknown;
  turn: number;
  /** Index of the tool message holding its result, and of the part, and the output there (absent while it has none). */
  result?: { message: number; part: number; output: unknown };
}

/** Model replies in a conversation: its turns. */
export function conversationTurns(messages: readonly Message[]): number {
  return messages.filter((message) => message.role === 'model').length;
}

/** The tool calls of a conversation with their results, by call id. */
export function conversationCalls(messages: readonly Message[]): Map<string, ForkCall> {
  const calls = new Map<string, ForkCall>();
  let turn = 0;
  let open = new Map<string, ForkCall>();
  messages.forEach((message, index) => {
    if (message.role === 'model') {
      turn += 1;
      open = new Map();
      for (const part of message.content) {
        if (!('toolRequest' in part) || part.toolRequest.ref === undefined) continue;
        const call: ForkCall = { id: `${turn}.${part.toolRequest.ref}`, toolName: part.toolRequest.name, input: part.toolRequest.input, turn };
        calls.set(call.id, call);
        open.set(part.toolRequest.ref, call);
      }
    } else if (message.role === 'tool') {
      message.content.forEach((part, partIndex) => {
        if (!('toolResponse' in part) || part.toolResponse.ref === undefined) return;
        const call = open.get(part.toolResponse.ref);
        if (call && call.toolName === part.toolResponse.name) call.result = { message: index, part: partIndex, output: part.toolResponse.output };
      });
    }
  });
  return calls;
}

/**
 * The conversation of a fork at `turn`: the messages before model reply `turn + 1`. Refused
 * (INVALID_ARGUMENT, saying what to do) when the run has fewer turns, or when turn `turn`'s
 * tool calls have not all finished (a hold still waits there).
 */
export function forkCut(messages: readonly Message[], turn: number, runId: string): Message[] {
  const turns = conversationTurns(messages);
  if (!Number.isInteger(turn) || turn < 0 || turn > turns) {
    throw new KeelError('INVALID_ARGUMENT', `run ${runId} has ${turns} ${turns === 1 ? 'turn' : 'turns'}: fork at a turn from 0 to ${turns} (got ${turn})`);
  }
  let seen = 0;
  const end = messages.findIndex((message) => message.role === 'model' && ++seen === turn + 1);
  const kept = end === -1 ? [...messages] : messages.slice(0, end);
  const unfinished = [...conversationCalls(kept).values()].filter((call) => call.turn === turn && !call.result);
  if (unfinished.length) {
    throw new KeelError(
      'INVALID_ARGUMENT',
      `turn ${turn} of run ${runId} has not finished its tool calls (${unfinished.map((call) => `${call.id} ${call.toolName}`).join(', ')}): fork at turn ${turn - 1}, or once they are decided`,
    );
  }
  return kept;
}

/**
 * A fork's conversation with its edits made, and the tool results it changed (for their tools'
 * output schemas to check). An unknown or unfinished call id is INVALID_ARGUMENT naming the ids
 * there are; a fork that would only ask the model again after its answer must give a message.
 */
export function applyForkEdits(
  kept: readonly Message[],
  { message, toolResults = {} }: ForkEdits,
  where: { runId: string; turn: number },
): { messages: Message[]; changed: Array<{ id: string; toolName: string; output: unknown }> } {
  const messages = kept.map((entry) => ({ ...entry, content: [...entry.content] }));
  const calls = conversationCalls(messages);
  const changed: Array<{ id: string; toolName: string; output: unknown }> = [];
  for (const [id, output] of Object.entries(toolResults)) {
    const call = calls.get(id);
    if (!call?.result) {
      const known = [...calls.values()].filter((entry) => entry.result).map((entry) => `${entry.id} (${entry.toolName})`);
      throw new KeelError(
        'INVALID_ARGUMENT',
        `--tool-result ${id}: no finished tool call "${id}" before turn ${where.turn + 1} of run ${where.runId}; calls there: ${known.join(', ') || '(none)'}`,
      );
    }
    const holder = messages[call.result.message]!;
    const part = holder.content[call.result.part] as Extract<Part, { toolResponse: unknown }>;
    holder.content[call.result.part] = { ...part, toolResponse: { ...part.toolResponse, output } };
    changed.push({ id, toolName: call.toolName, output });
  }
  if (!messages.some((entry) => entry.role !== 'system') && message === undefined) {
    throw new KeelError('INVALID_ARGUMENT', `run ${where.runId} has no conversation to go on from yet: give a message (--message)`);
  }
  if (message !== undefined) {
    if (!message.trim()) throw new KeelError('INVALID_ARGUMENT', '--message: the user message is empty');
    const user: Message = { role: 'user', content: [{ text: message }] };
    if (messages.at(-1)?.role === 'user') messages[messages.length - 1] = user;
    else messages.push(user);
  } else if (messages.at(-1)?.role === 'model') {
    throw new KeelError(
      'INVALID_ARGUMENT',
      `turn ${where.turn} of run ${where.runId} is its answer: give a message to go on from it (--message), or fork at an earlier turn`,
    );
  }
  return { messages, changed };
}

/** Workflow type name of the check a fork passes before it starts. */
export const FORK_CHECK_WORKFLOW = 'keelForkCheck';

/** The input of the fork check: the fork's agent and model, and the tool results it changes. */
export interface ForkCheckInput {
  agent: string;
  model?: string;
  toolResults: Array<{ id: string; toolName: string; output: unknown }>;
}
