/**
 * One turn's tool calls: each runs through the wrapTool chain (concurrently with its
 * siblings); a hold waits for its decision and restarts the call at the stage that raised
 * it (wait mode), or ends the turn interrupted (return mode). Then the turn settles: every
 * running call finishes before the first failure, in request order, fails the run (a
 * cancellation first); the tool's own failures that the tool-error policy covers answer
 * their call as `{ error }`. A failure that will end the run also ends the waits of the
 * turn's other holds, so nobody is asked to decide a call that can no longer run.
 * Runs in the workflow: deterministic, no I/O.
 */
import { isCancellation } from '@temporalio/workflow';
import { ToolFailure } from '../core/errors';
import { INTERRUPT_METADATA, ModelVisibleToolError, ToolInterrupt } from '../core/interrupts';
import { isToolAnswer } from '../core/tool-answer';
import { PROOF_METADATA } from '../core/proofs';
import type { Message, Part, ToolDefinition, ToolRequest, ToolRequestPart } from '../core/messages';
import type { ToolCall, ToolRestart } from '../middleware/compose';
import type { HoldBoard } from './hold-board';

/** What one tool call came to. */
export type CallOutcome =
  | { output: unknown; toolError?: true; fromPending?: true; responseMetadata?: Record<string, unknown> }
  /** Held; `request` is the call as it was held (a restart may have replaced its input). */
  | { interrupt: ToolInterrupt; request: ToolRequest };

/** What the steps of a tool turn need. */
export interface ToolTurnContext {
  /** The wrapTool chain (innermost: the tool). */
  chain: (call: ToolCall, restart?: ToolRestart) => Promise<unknown>;
  /** Every tool of the run (agent's and contributed), by name. */
  tools: ReadonlyMap<string, ToolDefinition>;
  board: HoldBoard;
  interruptMode: 'wait' | 'return';
  /** The run's tool-error policy (any middleware's `coversToolError`). */
  coversToolError: (toolName: string) => boolean;
}

/** One call to run. */
export interface RunCallOptions {
  part: ToolRequestPart;
  iteration: number;
  /** The messages of the model request that asked for the call. */
  requestMessages: Message[];
  /** Set when the call restarts a hold (a resume). */
  restart?: ToolRestart;
  /** The call's input before the restart replaced it. */
  originalInput?: unknown;
}

/** True when two inputs are the same JSON (a restart that sends the held input back replaces nothing). */
export function sameInput(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Runs one call through the chain. A call to a tool that does not exist fails NOT_FOUND
 * before any hook sees it. A hold waits for its decision (wait mode) and restarts the call,
 * or ends as an interrupt (return mode).
 */
export async function runCall(context: ToolTurnContext, { part, iteration, requestMessages, restart, originalInput }: RunCallOptions): Promise<CallOutcome> {
  const { name } = part.toolRequest;
  const tool = context.tools.get(name);
  if (!tool) {
    const available = [...context.tools.keys()];
    throw new ToolFailure({
      status: 'NOT_FOUND',
      message: `tool "${name}" not found; available tools: ${available.join(', ') || '(none)'}`,
      toolName: name,
      details: { availableTools: available },
    });
  }
  let request = part.toolRequest;
  let original = originalInput;
  let next = restart;
  for (;;) {
    try {
      const value = await context.chain({ request, tool, iteration, requestMessages, ...(original !== undefined ? { originalInput: original } : {}) }, next);
      return isToolAnswer(value) ? { output: value.output, responseMetadata: value.metadata } : { output: value };
    } catch (error) {
      if (ModelVisibleToolError.isInstance(error)) return { output: { error: error.message }, toolError: true };
      if (!ToolInterrupt.isInstance(error)) throw error;
      if (context.interruptMode === 'return') return { interrupt: error, request };
      const decided = await context.board.hold(error, request, tool.outputSchema);
      if ('output' in decided) return { output: decided.output };
      const inputReplaced = decided.input !== undefined && !sameInput(decided.input, request.input);
      if (inputReplaced) {
        original ??= request.input;
        request = { ...request, input: decided.input };
      }
      next = { stage: error.stage, payload: decided.payload, inputReplaced };
    }
  }
}

/** Metadata of a tool request part without any interrupt marks. */
export function withoutInterruptMarks(metadata: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!metadata) return undefined;
  const {
    [INTERRUPT_METADATA.interrupt]: _interrupt,
    [INTERRUPT_METADATA.interruptedBy]: _by,
    [INTERRUPT_METADATA.interruptStage]: _stage,
    [INTERRUPT_METADATA.pendingOutput]: _pending,
    [INTERRUPT_METADATA.interruptKind]: _kind,
    [PROOF_METADATA.hold]: _proof,
    ...rest
  } = metadata;
  return Object.keys(rest).length ? rest : undefined;
}

/**
 * The turn's model message with each held call marked (its hold's data, the raising stage's
 * name and position) and each finished sibling carrying its output, so a resume does not
 * run it again.
 */
function markInterrupted(modelMessage: Message, results: CallOutcome[]): Message {
  let position = 0;
  const content = modelMessage.content.map((part): Part => {
    if (!('toolRequest' in part)) return part;
    const result = results[position++]!;
    const rest = withoutInterruptMarks(part.metadata);
    if ('interrupt' in result) {
      const { data, raisedBy, stage, kindNamed } = result.interrupt;
      return {
        ...part,
        toolRequest: result.request,
        metadata: {
          ...rest,
          [INTERRUPT_METADATA.interrupt]: Object.keys(data).length ? data : true,
          [INTERRUPT_METADATA.interruptedBy]: raisedBy,
          [INTERRUPT_METADATA.interruptStage]: stage,
          ...(kindNamed ? { [INTERRUPT_METADATA.interruptKind]: result.interrupt.kind } : {}),
        },
      };
    }
    return { ...part, metadata: { ...rest, [INTERRUPT_METADATA.pendingOutput]: result.output } };
  });
  return { ...modelMessage, content };
}

/** How a turn ended: a tool message to append, or the model message marked with its holds. */
export type SettledTurn = { toolMessage: Message } | { interrupted: Message };

/** A turn to settle: its model message, the tool request parts, and the calls under way (same order). */
export interface SettleTurnOptions {
  modelMessage: Message;
  requests: ToolRequestPart[];
  calls: Array<Promise<CallOutcome>>;
}

/** Waits for every call of the turn and settles it (see the module comment). */
export async function settleTurn(context: ToolTurnContext, { modelMessage, requests, calls }: SettleTurnOptions): Promise<SettledTurn> {
  const answered = (failure: unknown, index: number) => ToolFailure.isInstance(failure) && context.coversToolError(requests[index]!.toolRequest.name);
  const outcomes = await Promise.allSettled(
    calls.map((call, index) =>
      call.catch((error: unknown) => {
        if (!answered(error, index)) context.board.stopWaiting(error);
        throw error;
      }),
    ),
  );
  context.board.waitAgain();
  const cancelled = outcomes.find((outcome) => outcome.status === 'rejected' && isCancellation(outcome.reason));
  if (cancelled?.status === 'rejected') throw cancelled.reason;
  const results = outcomes.map((outcome, index): CallOutcome => {
    if (outcome.status === 'fulfilled') return outcome.value;
    const failure: unknown = outcome.reason;
    if (answered(failure, index)) return { output: { error: (failure as ToolFailure).modelMessage }, toolError: true };
    throw failure;
  });
  if (results.some((result) => 'interrupt' in result)) return { interrupted: markInterrupted(modelMessage, results) };
  const content = results.map((result, index): Part => {
    const { name, ref } = requests[index]!.toolRequest;
    const output = 'output' in result ? result.output : undefined;
    const metadata = {
      ...('responseMetadata' in result ? result.responseMetadata : {}),
      ...('toolError' in result && result.toolError ? { toolError: true } : {}),
      ...('fromPending' in result && result.fromPending ? { source: 'pending' } : {}),
    };
    return { toolResponse: { name, ref, output }, ...(Object.keys(metadata).length ? { metadata } : {}) };
  });
  return { toolMessage: { role: 'tool', content } };
}
