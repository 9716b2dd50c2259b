/**
 * The first iteration of a run that resumes an interrupted one (interruptMode 'return'):
 * each held call of the last model message is answered by a restart (routed to the stage
 * that raised its hold, by position), a stand-in output, or the output it already had;
 * the answers form one tool message and the loop goes on. History then reads as the
 * reference's: resolved requests carry `resolvedInterrupt`, finished siblings lose their
 * `pendingOutput`, and responses built from it are marked `source: 'pending'`.
 * Runs in the workflow: deterministic, no I/O.
 */
import { KeelError } from '../core/errors';
import { INTERRUPT_METADATA, ResumePayloadSchema, TOOL_STAGE } from '../core/interrupts';
import { toolRequestParts, type Message, type Part, type ToolRequestPart } from '../core/messages';
import type { RunResume } from '../middleware/types';
import type { MiddlewareStage } from '../middleware/registry';
import { runCall, settleTurn, withoutInterruptMarks, type CallOutcome, type SettledTurn, type ToolTurnContext } from './tool-turn';

/** What answering the held calls needs besides the turn's context. */
export interface ResumeOptions {
  resume: RunResume & { metadata?: Record<string, unknown> };
  /** The run's middleware, in order (a hold names its stage by position and name). */
  stages: readonly MiddlewareStage[];
  /** Checks a stand-in output against the tool's output schema. */
  validateOutput: (toolName: string, output: unknown) => Promise<unknown>;
}

/** How a resume ended: the conversation to go on with, or the model message held again. */
export type ResumedTurn = { messages: Message[] } | { interrupted: Message };

const key = (name: string, ref: string | undefined) => `${name}#${ref ?? ''}`;

/**
 * The stage a held part names: its recorded position when the middleware there still has
 * the recorded name, else the first middleware of that name (holds recorded by name only),
 * else the tool itself.
 */
function stageOf(part: ToolRequestPart, stages: readonly MiddlewareStage[]): MiddlewareStage | undefined {
  const raisedBy = part.metadata?.[INTERRUPT_METADATA.interruptedBy];
  if (typeof raisedBy !== 'string' || raisedBy === TOOL_STAGE) return undefined;
  const position = part.metadata?.[INTERRUPT_METADATA.interruptStage];
  const recorded = typeof position === 'number' ? stages[position] : undefined;
  if (recorded?.name === raisedBy) return recorded;
  return stages.find((stage) => stage.name === raisedBy || raisedBy.endsWith(`/${stage.name}`));
}

/** The model message once its held calls are answered: holds recorded as resolved, pending outputs dropped. */
function resolved(modelMessage: Message): Message {
  const content = modelMessage.content.map((part): Part => {
    if (!('toolRequest' in part) || !part.metadata) return part;
    const hold = part.metadata[INTERRUPT_METADATA.interrupt];
    const rest = withoutInterruptMarks(part.metadata) ?? {};
    const interruptedBy = part.metadata[INTERRUPT_METADATA.interruptedBy];
    const metadata = hold === undefined ? rest : { ...rest, [INTERRUPT_METADATA.resolvedInterrupt]: hold, ...(interruptedBy !== undefined ? { [INTERRUPT_METADATA.interruptedBy]: interruptedBy } : {}) };
    const { metadata: _old, ...bare } = part;
    return Object.keys(metadata).length ? { ...bare, metadata } : bare;
  });
  return { ...modelMessage, content };
}

/** Answers the held requests of the interrupted run that `messages` end with (iteration 0). */
export async function resumeHeldCalls(context: ToolTurnContext, { resume, stages, validateOutput }: ResumeOptions, messages: Message[]): Promise<ResumedTurn> {
  const last = messages[messages.length - 1];
  const requests = last?.role === 'model' ? toolRequestParts(last) : [];
  if (!last || requests.length === 0) throw new KeelError('FAILED_PRECONDITION', 'resume needs messages that end with a model message asking for tools');
  const restarts = new Map(resume.restart.map((part) => [key(part.toolRequest.name, part.toolRequest.ref), part]));
  const responds = new Map(resume.respond.map((part) => [key(part.toolResponse.name, part.toolResponse.ref), part]));

  /** How each held call is answered; an unresolved one fails the run before any call runs. */
  const plan = (part: ToolRequestPart): (() => Promise<CallOutcome>) => {
    const id = key(part.toolRequest.name, part.toolRequest.ref);
    const stage = stageOf(part, stages);
    const position = stage?.index ?? stages.length;
    const restart = restarts.get(id);
    if (restart) {
      const payload = ResumePayloadSchema.safeParse(restart.metadata?.[INTERRUPT_METADATA.resumed]);
      const input = restart.toolRequest.input;
      const inputReplaced = input !== undefined && JSON.stringify(input) !== JSON.stringify(part.toolRequest.input);
      const call: ToolRequestPart = inputReplaced ? { ...part, toolRequest: { ...part.toolRequest, input } } : part;
      return () => runCall(context, call, 0, messages, { stage: position, payload: payload.success ? payload.data : true, inputReplaced }, inputReplaced ? part.toolRequest.input : undefined);
    }
    const respond = responds.get(id);
    if (respond) {
      const output = respond.toolResponse.output;
      // A stage that decides stand-in outputs itself (e.g. Budget) gets it as its payload.
      if (stage?.holds.respond === 'decide') return () => runCall(context, part, 0, messages, { stage: position, payload: { respond: output }, inputReplaced: false });
      return async () => ({ output: await validateOutput(part.toolRequest.name, output) });
    }
    const metadata = part.metadata ?? {};
    if (INTERRUPT_METADATA.pendingOutput in metadata) return async () => ({ output: metadata[INTERRUPT_METADATA.pendingOutput], fromPending: true });
    const heldBy = stage ? ` (held by middleware "${stage.name}")` : '';
    throw new KeelError('INVALID_ARGUMENT', `unresolved tool request "${id}"${heldBy}: answer it with a restart or a respond`, { toolName: part.toolRequest.name });
  };

  const plans = requests.map(plan);
  const settled: SettledTurn = await settleTurn(context, last, requests, plans.map((run) => run()));
  if ('interrupted' in settled) return settled;
  return { messages: [...messages.slice(0, -1), resolved(last), { ...settled.toolMessage, metadata: { resumed: resume.metadata ?? true } }] };
}
