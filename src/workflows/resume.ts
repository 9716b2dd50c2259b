/**
 * The first iteration of a run that resumes an interrupted one (interruptMode 'return'):
 * each request of the last model message is answered by a restart (routed to the stage
 * that raised its hold), a stand-in output, or the output it already had; the answers form
 * one tool message and the loop goes on. History then reads as the reference's: resolved
 * requests carry `resolvedInterrupt`, finished siblings lose their `pendingOutput`, and
 * responses built from it are marked `source: 'pending'`.
 * Runs in the workflow: deterministic, no I/O.
 */
import { approversOf, type ApproverRules } from '../core/approvers';
import { KeelError } from '../core/errors';
import { INTERRUPT_METADATA, TOOL_STAGE } from '../core/interrupts';
import {
  ResumePayloadSchema,
  decisionRecord,
  resumption,
  undeclaredHold,
  type DecisionBody,
  type DecisionRecord,
  type HoldKind,
  type ResumePayload,
} from '../core/holds';
import { toolRequestParts, type Message, type Part, type ToolRequestPart } from '../core/messages';
import type { RunResume } from '../core/run';
import type { ToolRestart } from '../middleware/compose';
import { holdKindOf } from '../middleware/hold-kinds';
import type { MiddlewareStage } from '../middleware/stages';
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
  /** The agent's approver rules (docs/auth.md): a held call they bind is not decided by a resume. */
  approvers?: ApproverRules | undefined;
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

/** A tool's own question: the tool gets the payload as sent. */
const TOOL_HOLD = undeclaredHold(TOOL_STAGE);

/** The kind of hold a held request was held with: its middleware's kind (recorded when not its first), or a tool's own. */
function kindOf(part: ToolRequestPart, target: HoldTarget): HoldKind | undefined {
  if (!target.held || target.stage === 'every') return undefined;
  if (!target.middleware) return TOOL_HOLD;
  const named = part.metadata?.[INTERRUPT_METADATA.interruptKind];
  return holdKindOf(target.middleware.holds, typeof named === 'string' ? named : undefined) ?? target.middleware.holds[0];
}

/**
 * What the answer to a held request hands the raising stage, through the same step as a live
 * decision (`resumption`): the restart's payload, or a stand-in output for a kind that decides
 * them, parsed by the kind's decision schema. A decision the kind does not take fails the
 * resume with INVALID_ARGUMENT naming the request and the field.
 */
function stagePayload(part: ToolRequestPart, hold: HoldKind | undefined, body: DecisionBody): unknown {
  if (!hold) return 'restart' in body ? body.restart : undefined;
  const taken = resumption(hold, body);
  if (taken.success) return 'payload' in taken.value ? taken.value.payload : undefined;
  throw new KeelError(
    'INVALID_ARGUMENT',
    `the answer to tool request "${key(part.toolRequest.name, part.toolRequest.ref)}" (a ${hold.kind} hold) is not one it takes: ${taken.error}`,
    { toolName: part.toolRequest.name },
  );
}

/** The payloads a resume addresses to each stage's holds (restarts, and `{ respond }` for `decide` holds), parsed, by stage index. */
export function resumedHoldsByStage(resume: RunResume, messages: readonly Message[], stages: readonly MiddlewareStage[]): Map<number, unknown[]> {
  const byStage = new Map<number, unknown[]>();
  const last = messages[messages.length - 1];
  const parts = last?.role === 'model' ? toolRequestParts(last) : [];
  const restarts = new Map(resume.restart.map((part) => [key(part.toolRequest.name, part.toolRequest.ref), part]));
  const responds = new Map(resume.respond.map((part) => [key(part.toolResponse.name, part.toolResponse.ref), part]));
  for (const part of parts) {
    const target = holdTarget(part, stages);
    if (!target.held || target.stage === 'every' || !target.middleware) continue;
    const hold = kindOf(part, target);
    const id = key(part.toolRequest.name, part.toolRequest.ref);
    const restart = restarts.get(id);
    const respond = responds.get(id);
    const payload = restart
      ? stagePayload(part, hold, { restart: payloadOf(restart) })
      : respond && hold?.respond === 'decide'
        ? stagePayload(part, hold, { respond: respond.toolResponse.output })
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
export async function resumeHeldCalls(context: ToolTurnContext, { resume, stages, validateOutput, messages, approvers }: ResumeOptions): Promise<ResumedTurn> {
  // A resume carries no proof of who decided: a call the agent's approver rules bind waits for a verified decider instead.
  for (const part of [...resume.restart.map((restart) => restart.toolRequest.name), ...resume.respond.map((respond) => respond.toolResponse.name)]) {
    const rule = approversOf(approvers, part);
    if (rule)
      throw new KeelError(
        'PERMISSION_DENIED',
        `a held ${part} call may be decided only by ${rule.approvers.join(', ')}, and a resume names no verified decider: let the run wait for the decision (interruptMode 'wait') and decide it through keel serve with auth on`,
      );
  }
  const last = messages[messages.length - 1];
  const requests = last?.role === 'model' ? toolRequestParts(last) : [];
  if (!last || requests.length === 0) throw new KeelError('FAILED_PRECONDITION', 'resume needs messages that end with a model message asking for tools');
  const requestMessages = messages.slice(0, -1);
  const restarts = new Map(resume.restart.map((part) => [key(part.toolRequest.name, part.toolRequest.ref), part]));
  const responds = new Map(resume.respond.map((part) => [key(part.toolResponse.name, part.toolResponse.ref), part]));

  const decisions: DecisionRecord[] = [];
  /** Records the decision on a held request (its id is the request's `name#ref`: a returned hold has no other). */
  const record = (part: ToolRequestPart, hold: HoldKind | undefined, body: DecisionBody) => {
    const id = key(part.toolRequest.name, part.toolRequest.ref);
    const { name: toolName, ref } = part.toolRequest;
    const held = { id, kind: hold?.kind ?? 'unknown', toolName, ...(ref !== undefined ? { ref } : {}) };
    decisions.push(decisionRecord(held, { ...body, ...(resume.decidedBy !== undefined ? { decidedBy: resume.decidedBy } : {}) }, 'resume'));
  };

  /** How each request is answered; an unresolved one fails the run before any call runs. */
  const plan = (part: ToolRequestPart): (() => Promise<CallOutcome>) => {
    const id = key(part.toolRequest.name, part.toolRequest.ref);
    const target = holdTarget(part, stages);
    const hold = kindOf(part, target);
    const restart = restarts.get(id);
    if (restart) {
      const input = restart.toolRequest.input;
      const inputReplaced = input !== undefined && !sameInput(input, part.toolRequest.input);
      const call: ToolRequestPart = inputReplaced ? { ...part, toolRequest: { ...part.toolRequest, input } } : part;
      const body = { restart: payloadOf(restart) };
      // A request that was never held runs as a fresh call: no stage counts as having let it through.
      let routed: ToolRestart | undefined;
      if (target.held) {
        routed = { stage: target.stage, payload: stagePayload(part, hold, body), inputReplaced };
        // A hold that recorded no stage: each stage reads the payload as its own first kind parses it.
        if (target.stage === 'every') routed.payloadFor = (index) => stagePayload(part, stages[index]?.holds[0] ?? TOOL_HOLD, body);
        record(part, hold, body);
      }
      return () =>
        runCall(context, { part: call, iteration: 0, requestMessages, restart: routed, originalInput: inputReplaced ? part.toolRequest.input : undefined });
    }
    const respond = responds.get(id);
    if (respond) {
      const output = respond.toolResponse.output;
      if (target.held) record(part, hold, { respond: output });
      // A stage that decides stand-in outputs itself (e.g. Budget) gets it as its payload.
      if (target.held && target.stage !== 'every' && hold?.respond === 'decide') {
        const payload = stagePayload(part, hold, { respond: output });
        return () => runCall(context, { part, iteration: 0, requestMessages, restart: { stage: target.stage, payload, inputReplaced: false } });
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
  // The decisions the resume takes (route `resume`) show in status and the result.
  if (decisions.length) context.board.recordDecisions(decisions);
  const settled: SettledTurn = await settleTurn(context, { modelMessage: last, requests, calls: plans.map((run) => run()) });
  if ('interrupted' in settled) return settled;
  return { messages: [...requestMessages, resolved(last), { ...settled.toolMessage, metadata: { resumed: resume.metadata ?? true } }] };
}
