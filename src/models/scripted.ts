/**
 * The `scripted` provider: a real model provider whose replies are programmed per call.
 * Reply N answers the N-th call one run makes to this model (each run counts from zero;
 * retries and fallbacks count as calls). Used by tests, the demo, and temporal.yaml.
 * Node side: runs in the model activity.
 */
import { z } from 'zod';
import { KeelError } from '../core/errors';
import type { FinishReason, Message, ModelRequest, ModelResponse, Part } from '../core/messages';
import { type StatusName } from '../core/status';
import { ScriptedReplySchema, type ScriptedReply } from '../core/scripted-reply';
import { defineModel, type Model, type ModelContext } from '../define';

export { ScriptedReplySchema, type ScriptedReply } from '../core/scripted-reply';

/** A request the scripted model saw. */
export interface RecordedRequest {
  runId: string;
  callIndex: number;
  request: ModelRequest;
}

/** A reply computed from the request the model was sent. */
export type ReplyFunction = (request: ModelRequest, callIndex: number) => ScriptedReply | Promise<ScriptedReply>;

/** Replies as a list (one per call; an entry may be computed from its request) or one function for every call. */
export type Script = Array<ScriptedReply | ReplyFunction> | ReplyFunction;

/** A scripted model; `requests` records what it was asked, in order. */
export interface ScriptedModel extends Model {
  readonly requests: RecordedRequest[];
  readonly scriptLength: number | undefined;
}

/** Options of `scriptedModel`. */
export interface ScriptedModelOptions {
  /** Registered name, conventionally `scripted/<something>`. */
  name: string;
  script: Script;
  /** How many of the latest requests `requests` keeps (default: all; a long run's requests add up). */
  keepRequests?: number;
}

/** Builds a scripted model. */
export function scriptedModel({ name, script, keepRequests }: ScriptedModelOptions): ScriptedModel {
  const requests: RecordedRequest[] = [];
  const model = defineModel({
    name,
    async generate(request: ModelRequest, context: ModelContext): Promise<ModelResponse> {
      requests.push({ runId: context.runId, callIndex: context.callIndex, request });
      if (keepRequests !== undefined && requests.length > keepRequests) requests.splice(0, requests.length - keepRequests);
      const raw = await replyFor(name, script, request, context.callIndex);
      const reply = ScriptedReplySchema.parse(raw);
      if (reply.delayMs) await abortableSleep(reply.delayMs, context);
      for (const chunk of reply.stream ?? []) {
        if (reply.chunkDelayMs) await abortableSleep(reply.chunkDelayMs, context);
        context.stream?.(chunk);
      }
      if (reply.error) {
        const { status, message, retryAfterMs } = reply.error;
        if (!status) throw new Error(message);
        throw new KeelError(status, message, { modelName: name, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
      }
      if (reply.object !== undefined && request.output?.format !== 'json') {
        throw new KeelError(
          'FAILED_PRECONDITION',
          `scripted model "${name}" answered call #${context.callIndex + 1} with an object, but the request asked for no structured output (the agent or run has no output schema)`,
          { modelName: name },
        );
      }
      return toResponse(reply);
    },
  });
  return { ...model, requests, scriptLength: Array.isArray(script) ? script.length : undefined };
}

async function replyFor(name: string, script: Script, request: ModelRequest, callIndex: number): Promise<ScriptedReply> {
  if (typeof script === 'function') return script(request, callIndex);
  const reply = script[callIndex];
  if (typeof reply === 'function') return reply(request, callIndex);
  if (!reply) {
    throw new KeelError(
      'FAILED_PRECONDITION',
      `scripted model "${name}" has no reply for call #${callIndex + 1} of this run (its script has ${script.length} ${script.length === 1 ? 'reply' : 'replies'})`,
      { modelName: name },
    );
  }
  return reply;
}

function toResponse(reply: z.output<typeof ScriptedReplySchema>): ModelResponse {
  const content: Part[] = [];
  const text = reply.text ?? (reply.object !== undefined ? JSON.stringify(reply.object) : reply.stream?.join(''));
  if (text !== undefined) content.push({ text });
  for (const request of reply.toolRequests ?? []) {
    content.push({ toolRequest: { name: request.name, ...(request.ref ? { ref: request.ref } : {}), input: request.input } });
  }
  const message: Message = { role: 'model', content };
  const finishReason: FinishReason = reply.finishReason ?? 'stop';
  // As scripted: the model activity checks it (`checkedUsage`), as it checks every provider's.
  return { message, finishReason, usage: reply.usage ?? {} };
}

function abortableSleep(ms: number, context: ModelContext): Promise<void> {
  return new Promise((resolve, reject) => {
    const beat = setInterval(() => context.heartbeat(), Math.min(1000, ms));
    // Removed once slept: a streamed reply sleeps once per piece on the call's one signal.
    const abort = () => {
      clearTimeout(timer);
      clearInterval(beat);
      reject(new KeelError('CANCELLED', 'model call cancelled'));
    };
    const timer = setTimeout(() => {
      clearInterval(beat);
      context.signal.removeEventListener('abort', abort);
      resolve();
    }, ms);
    context.signal.addEventListener('abort', abort, { once: true });
  });
}

/** A reply with text only. */
export function textReply(text: string, extra: Omit<ScriptedReply, 'text'> = {}): ScriptedReply {
  return { ...extra, text };
}

/** A structured answer (for a run with an output schema): the value, answered as its JSON text. */
export function objectReply(value: unknown, extra: Omit<ScriptedReply, 'object'> = {}): ScriptedReply {
  return { ...extra, object: value };
}

/** A reply asking for one tool call, or several (run concurrently). */
export function toolCallReply(
  calls: { name: string; input?: unknown; ref?: string } | Array<{ name: string; input?: unknown; ref?: string }>,
  extra: Omit<ScriptedReply, 'toolRequests'> = {},
): ScriptedReply {
  return { ...extra, toolRequests: (Array.isArray(calls) ? calls : [calls]).map((call) => ({ input: {}, ...call })) };
}

/** A reply that fails with a status. */
export function errorReply(status: StatusName, message = `scripted ${status}`, extra: Omit<ScriptedReply, 'error'> = {}): ScriptedReply {
  return { ...extra, error: { status, message } };
}
