/**
 * The first iteration of a run that resumes an interrupted one (interruptMode 'return'):
 * each request of the last model message is answered by a restart (routed to the stage
 * that raised its hold), a stand-in output, or the output it already had; the answers form
 * one tool message and the loop goes on. History then reads as the reference's: resolved
 * requests carry `resolvedInterrupt`, finished siblings lose their `pendingOutput`, and
 * responses built from it are marked `source: 'pending'`.
 * Runs in the workflow: deterministic, no I/O.
 */
import { KeelError } from '../core/errors';
import { INTERRUPT_METADATA, ResumePayloadSchema, TOOL_STAGE, type ResumePayload } from '../core/interrupts';
import { toolRequestParts, type Message, type Part, type ToolRequestPart } from '../core/messages';
import type { RunResume } from '../core/run';
import type { ToolRestart } from '../middleware/compose';
import type { MiddlewareStage } from '../middleware/registry';
import { runCall, sameInput, settleTurn, withoutInterruptMarks, type CallOutcome, type SettledTurn, type ToolTurnContext } from './tool-turn';

/** What answering the held calls needs besides the turn's context. */
export interface ResumeOptions {
  resume: RunResume;
  /** The run's middleware, in order (a hold names its stage by position and name). */
  stages: readonly MiddlewareStage[];
  /** Checks a stand-in output against the tool's output schema. */
  validateOutput: (toolName: string, output: unknown) => Promise<unknown>;
  /** The conversation, ending with the interrupted model message. */
  messages: Message[];
}

/** How a resume ended: the conversation to go on with, or the model message held again. */
export type ResumedTurn = { messages: Message[] } | { interrupted: Message };

/** Who held a request of the interrupted message. */
export type HoldTarget =
  /** Never held (a finished sibling, or a call answered without a hold). */
  | { held: false }
  /** Held by a middleware of this run, or by the tool (stage = the chain's length). */
  | { held: true; stage: number; middleware?: MiddlewareStage }
  /** Held without a recorded stage (written before stages were recorded): every stage reads the answer. */
  | { held: true; stage: 'every' };

const key = (name: string, ref: string | undefined) => `${name}#${ref ?? ''}`;

/**
 * The stage that held a request: its recorded position when the middleware there has the
 * recorded name, else the first middleware of that name (a hold recorded by name, or by
 * the reference's `genkit-middleware/<name>`). A hold naming a middleware the run does not
 * use is FAILED_PRECONDITION: no stage of this run can decide it.
 */
export function holdTarget(part: ToolRequestPart, stages: readonly MiddlewareStage[]): HoldTarget {
  const metadata = part.metadata ?? {};
  if (metadata[INTERRUPT_METADATA.interrupt] === undefined) return { held: false };
  const raisedBy = metadata[INTERRUPT_METADATA.interruptedBy];
  if (typeof raisedBy !== 'string') return { held: true, stage: 'every' };
  if (raisedBy === TOOL_STAGE) return { held: true, stage: stages.length };
  const position = metadata[INTERRUPT_METADATA.interruptStage];
  const recorded = typeof position === 'number' ? stages[position] : undefined;
  const middleware = recorded?.name === raisedBy ? recorded : stages.find((stage) => stage.name === raisedBy || raisedBy.endsWith(`/${stage.name}`));
  if (!middleware) {
    throw new KeelError(
      'FAILED_PRECONDITION',
      `tool request "${key(part.toolRequest.name, part.toolRequest.ref)}" was held by middleware "${raisedBy}", which this run does not use; resume it with the same middleware`,
      { toolName: part.toolRequest.name },
    );
  }
  return { held: true, stage: middleware.index, middleware };
}

/** The payloads a resume addresses to each stage's holds (restarts, and `{ respond }` for `decide` holds), by stage index. */
export function resumedHoldsByStage(resume: RunResume, messages: readonly Message[], stages: readonly MiddlewareStage[]): Map<number, ResumePayload[]> {
  const byStage = new Map<number, ResumePayload[]>();
  const last = messages[messages.length - 1];
  const parts = last?.role === 'model' ? toolRequestParts(last) : [];
  const restarts = new Map(resume.restart.map((part) => [key(part.toolRequest.name, part.toolRequest.ref), part]));
  const responds = new Map(resume.respond.map((part) => [key(part.toolResponse.name, part.toolResponse.ref), part]));
  for (const part of parts) {
    const target = holdTarget(part, stages);
    if (!target.held || target.stage === 'every' || !target.middleware) continue;
    const id = key(part.toolRequest.name, part.toolRequest.ref);
    const restart = restarts.get(id);
    const respond = responds.get(id);
    const payload = restart
      ? payloadOf(restart)
      : respond && target.middleware.holds.respond === 'decide'
        ? { respond: respond.toolResponse.output }
        : undefined;
    if (payload !== undefined) byStage.set(target.stage, [...(byStage.get(target.stage) ?? []), payload]);
  }
  return byStage;
}

/** A restart part's payload: its `metadata.resumed` object, or `true` (a bare restart). */
function payloadOf(restart: ToolRequestPart): ResumePayload {
  const payload = ResumePayloadSchema.safeParse(restart.metadata?.[INTERRUPT_METADATA.resumed]);
  return payload.success ? payload.data : true;
}

/** The model message once its held calls are answered: holds recorded as resolved, pending outputs dropped. */
function resolved(modelMessage: Message): Message {
  const content = modelMessage.content.map((part): Part => {
    if (!('toolRequest' in part) || !part.metadata) return part;
    const hold = part.metadata[INTERRUPT_METADATA.interrupt];
    const rest = withoutInterruptMarks(part.metadata) ?? {};
    const interruptedBy = part.metadata[INTERRUPT_METADATA.interruptedBy];
    const metadata =
      hold === undefined
        ? rest
        : {
            ...rest,
            [INTERRUPT_METADATA.resolvedInterrupt]: hold,
            ...(interruptedBy !== undefined ? { [INTERRUPT_METADATA.interruptedBy]: interruptedBy } : {}),
          };
    const { metadata: _old, ...bare } = part;
    return Object.keys(metadata).length ? { ...bare, metadata } : bare;
  });
  return { ...modelMessage, content };
}

/** Answers the held requests of the interrupted run that `messages` end with (iteration 0). */
export async function resumeHeldCalls(context: ToolTurnContext, { resume, stages, validateOutput, messages }: ResumeOptions): Promise<ResumedTurn> {
  const last = messages[messages.length - 1];
  const requests = last?.role === 'model' ? toolRequestParts(last) : [];
  if (!last || requests.length === 0) throw new KeelError('FAILED_PRECONDITION', 'resume needs messages that end with a model message asking for tools');
  const requestMessages = messages.slice(0, -1);
  const restarts = new Map(resume.restart.map((part) => [key(part.toolRequest.name, part.toolRequest.ref), part]));
  const responds = new Map(resume.respond.map((part) => [key(part.toolResponse.name, part.toolResponse.ref), part]));

  /** How each request is answered; an unresolved one fails the run before any call runs. */
  const plan = (part: ToolRequestPart): (() => Promise<CallOutcome>) => {
    const id = key(part.toolRequest.name, part.toolRequest.ref);
    const target = holdTarget(part, stages);
    const restart = restarts.get(id);
    if (restart) {
      const input = restart.toolRequest.input;
      const inputReplaced = input !== undefined && !sameInput(input, part.toolRequest.input);
      const call: ToolRequestPart = inputReplaced ? { ...part, toolRequest: { ...part.toolRequest, input } } : part;
      // A request that was never held runs as a fresh call: no stage counts as having let it through.
      const routed: ToolRestart | undefined = target.held ? { stage: target.stage, payload: payloadOf(restart), inputReplaced } : undefined;
      return () =>
        runCall(context, { part: call, iteration: 0, requestMessages, restart: routed, originalInput: inputReplaced ? part.toolRequest.input : undefined });
    }
    const respond = responds.get(id);
    if (respond) {
      const output = respond.toolResponse.output;
      // A stage that decides stand-in outputs itself (e.g. Budget) gets it as its payload.
      if (target.held && 'middleware' in target && target.middleware?.holds.respond === 'decide') {
        return () =>
          runCall(context, { part, iteration: 0, requestMessages, restart: { stage: target.stage, payload: { respond: output }, inputReplaced: false } });
      }
      return async () => ({ output: await validateOutput(part.toolRequest.name, output) });
    }
    const metadata = part.metadata ?? {};
    if (INTERRUPT_METADATA.pendingOutput in metadata) return async () => ({ output: metadata[INTERRUPT_METADATA.pendingOutput], fromPending: true });
    const heldBy = target.held && 'middleware' in target && target.middleware ? ` (held by middleware "${target.middleware.name}")` : '';
    throw new KeelError('INVALID_ARGUMENT', `unresolved tool request "${id}"${heldBy}: answer it with a restart or a respond`, {
      toolName: part.toolRequest.name,
    });
  };

  const plans = requests.map(plan);
  const settled: SettledTurn = await settleTurn(context, { modelMessage: last, requests, calls: plans.map((run) => run()) });
  if ('interrupted' in settled) return settled;
  return { messages: [...requestMessages, resolved(last), { ...settled.toolMessage, metadata: { resumed: resume.metadata ?? true } }] };
}
