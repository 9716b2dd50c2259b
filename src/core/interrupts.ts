/**
 * Interrupts: a tool call held for a decision. A tool or a wrapTool hook raises a hold
 * (`ToolInterrupt`, built by the framework: hooks call `context.interrupt(data)`, tools
 * `ctx.interrupt(data)`); the run records it as a pending interrupt and waits for a
 * decision, or (interruptMode 'return') ends with the interrupted parts. Also the
 * model-visible tool failure a hook can answer a call with (`toolFail`).
 * Pure: safe in workflow code.
 */
import { z } from 'zod';
import { KeelError } from './errors';
import { describeUndecodable, isUndecodable } from './undecodable';

/** The stage name a tool's own interrupt is raised by. */
export const TOOL_STAGE = 'tool';

/** Failure type with which a tool activity asks for an interrupt (ToolContext.interrupt). */
export const TOOL_INTERRUPT_FAILURE = 'KEEL_INTERRUPT';

/** Failure type with which a tool activity answers its call with an error the model sees (`toolFail`). */
export const TOOL_FAIL_FAILURE = 'KEEL_TOOL_FAIL';

/** Metadata keys of an interrupted tool request part (the reference's, plus keel's stage position). */
export const INTERRUPT_METADATA = {
  /** The hold's data (`true` when it has none). */
  interrupt: 'interrupt',
  /** Name of the stage that raised the hold ("tool" for the tool itself). */
  interruptedBy: 'interruptedBy',
  /** Position of that stage in the run's wrapTool chain, so a resume reaches the same instance. */
  interruptStage: 'interruptStage',
  /** After a resume: the data of the hold the part was interrupted with. */
  resolvedInterrupt: 'resolvedInterrupt',
  /** On a sibling of a held call: the output it already produced, so a resume does not run it again. */
  pendingOutput: 'pendingOutput',
  /** On a restart part: the decision's payload for the stage that raised the hold. */
  resumed: 'resumed',
} as const;

/** How a middleware's holds are decided; declared once by the middleware (see `defineMiddleware`). */
export interface HoldPolicy {
  /** Shown as `kind` in pending interrupts (default: the middleware's name). */
  kind?: string;
  /** One decision answers every pending hold of this middleware in the run. */
  sharedDecision?: boolean;
  /**
   * What a stand-in output (`respond`) does to one of these holds: `answer` (default) answers
   * the call with it, checked against the tool's output schema; `decide` hands it to the
   * stage that raised the hold as the payload `{ respond: output }`, for it to decide.
   */
  respond?: 'answer' | 'decide';
}

const INTERRUPT_MARK = '__keelToolInterrupt';

/** What a hold carries: who raised it, where, and under which policy. */
export interface ToolInterruptOptions {
  /** JSON object shown to whoever decides (message, judge, spent, ...). */
  data: Record<string, unknown>;
  /** The middleware name that raised it, or TOOL_STAGE for the tool itself. */
  raisedBy: string;
  /** Position of the raising stage in the wrapTool chain (the tool: after every hook). */
  stage: number;
  policy?: HoldPolicy;
}

/** A held tool call, thrown by the stage that holds it. Built by the framework. */
export class ToolInterrupt extends Error {
  readonly [INTERRUPT_MARK] = true;
  readonly data: Record<string, unknown>;
  readonly raisedBy: string;
  readonly stage: number;
  readonly policy: HoldPolicy;

  constructor({ data, raisedBy, stage, policy = {} }: ToolInterruptOptions) {
    super(typeof data.message === 'string' ? data.message : `tool call held by ${raisedBy}`);
    this.name = 'ToolInterrupt';
    this.data = data;
    this.raisedBy = raisedBy;
    this.stage = stage;
    this.policy = policy;
  }

  /** `kind` as pending interrupts show it. */
  get kind(): string {
    return this.policy.kind ?? this.raisedBy;
  }

  /** True for a ToolInterrupt from any V8 context. */
  static isInstance(error: unknown): error is ToolInterrupt {
    return typeof error === 'object' && error !== null && (error as Record<string, unknown>)[INTERRUPT_MARK] === true;
  }
}

/** Checks hold data: it must be a plain JSON object (the reference rejects anything else). */
export function holdData(data: unknown): Record<string, unknown> {
  if (data === undefined) return {};
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new KeelError('INVALID_ARGUMENT', `interrupt data must be a JSON object, got ${Array.isArray(data) ? 'an array' : typeof data}`);
  }
  return data as Record<string, unknown>;
}

const MODEL_VISIBLE_MARK = '__keelModelVisibleToolError';

/**
 * An error that answers the tool call with `{ "error": message }` for the model to see,
 * instead of failing the run (a denial, for example). The reference's `tool.Fail`.
 */
export class ModelVisibleToolError extends KeelError {
  readonly [MODEL_VISIBLE_MARK] = true;
  constructor(message: string) {
    super('ABORTED', message);
    this.name = 'ModelVisibleToolError';
  }

  /** True for a ModelVisibleToolError from any V8 context. */
  static override isInstance(error: unknown): error is ModelVisibleToolError {
    return typeof error === 'object' && error !== null && (error as Record<string, unknown>)[MODEL_VISIBLE_MARK] === true;
  }
}

/** Answers the call with `{ "error": message }` for the model to see: `throw toolFail('denied')`. */
export function toolFail(message: string): ModelVisibleToolError {
  return new ModelVisibleToolError(message);
}

/** A restart payload: an object for the raising stage, or `true` for a bare restart. */
export const ResumePayloadSchema = z.union([z.literal(true), z.record(z.string(), z.unknown())]);
export type ResumePayload = z.infer<typeof ResumePayloadSchema>;

/**
 * What a decision may say about the hold it is meant for: when given, the run refuses it for
 * a hold of another tool (or call). keel's client fills them in, so a decision the server
 * re-applies after a `workflow reset` never lands on a different call that got the same id.
 */
const HOLD_TARGET = {
  /** The held tool's name. */
  toolName: z.string().min(1).optional(),
  /** The held call's ref (its position in the model message). */
  ref: z.string().optional(),
};

/** A decision on a pending interrupt, as the `resume` update or signal carries it. */
const ApprovalSchema = z.object({ interruptId: z.string().min(1), approved: z.boolean(), reason: z.string().optional(), ...HOLD_TARGET }).strict();
const RespondSchema = z.object({ interruptId: z.string().min(1), respond: z.unknown(), ...HOLD_TARGET }).strict();
const RestartSchema = z
  .object({
    interruptId: z.string().min(1),
    restart: ResumePayloadSchema,
    /** Runs the call with this input instead; every gate checks it again. */
    input: z.unknown().optional(),
    ...HOLD_TARGET,
  })
  .strict();
export const DecisionSchema = z.union([ApprovalSchema, RespondSchema, RestartSchema]);
export type Decision = z.infer<typeof DecisionSchema>;

/** The three shapes of a decision, by the key that tells them apart. */
const DECISION_SHAPES = [
  { key: 'approved', schema: ApprovalSchema, shape: '{ interruptId, approved, reason? } (approve or deny)' },
  { key: 'respond', schema: RespondSchema, shape: '{ interruptId, respond } (answer the call with a stand-in output)' },
  { key: 'restart', schema: RestartSchema, shape: '{ interruptId, restart, input? } (run the call again)' },
] as const;

/**
 * Parses a decision, telling its three shapes apart by their key (`approved`, `respond` or
 * `restart`) so an error names the shape meant and the bad field, e.g.
 * `malformed decision { interruptId, approved, reason? } (approve or deny): approved: expected boolean, received string`.
 */
export function parseDecision(raw: unknown): { success: true; data: Decision } | { success: false; error: string } {
  if (isUndecodable(raw)) return { success: false, error: `malformed decision: ${describeUndecodable(raw)}` };
  const all = `one of ${DECISION_SHAPES.map((entry) => entry.shape).join(', ')}`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return {
      success: false,
      error: `malformed decision: expected a JSON object, ${all}; got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw}`,
    };
  const present = DECISION_SHAPES.filter((entry) => entry.key in raw);
  if (present.length === 0) return { success: false, error: `malformed decision: expected ${all}; got the keys ${Object.keys(raw).join(', ') || '(none)'}` };
  if (present.length > 1)
    return { success: false, error: `malformed decision: it has ${present.map((entry) => `"${entry.key}"`).join(' and ')}; send exactly one of them (${all})` };
  const [{ schema, shape }] = present as [(typeof DECISION_SHAPES)[number]];
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { success: true, data: parsed.data };
  const fields = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message.replace(/^Invalid input: /, '')}`).join('; ');
  return { success: false, error: `malformed decision ${shape}: ${fields}` };
}

/** Why a decision does not fit the hold with its id (another tool or call), or undefined when it fits. */
export function holdMismatch(decision: Decision, hold: { id: string; toolName?: string; ref?: string }): string | undefined {
  const meant = decision.toolName !== undefined && decision.toolName !== hold.toolName;
  const call = decision.ref !== undefined && hold.ref !== undefined && decision.ref !== hold.ref;
  if (!meant && !call) return undefined;
  const describe = (toolName?: string, ref?: string) => `tool "${toolName ?? '?'}"${ref !== undefined ? ` (ref ${ref})` : ''}`;
  return `interrupt ${hold.id} holds ${describe(hold.toolName, hold.ref)}; the decision is for ${describe(decision.toolName ?? hold.toolName, decision.ref ?? hold.ref)}`;
}

/**
 * The payload a decision hands to the stage that raised the hold, exactly as given:
 * a restart's payload, `{ approved, reason? }`, or (for a `decide` hold) `{ respond }`.
 */
export function decisionPayload(decision: Decision): ResumePayload {
  if ('restart' in decision) return decision.restart;
  if ('respond' in decision) return { respond: decision.respond };
  return decision.reason !== undefined ? { approved: decision.approved, reason: decision.reason } : { approved: decision.approved };
}

/** The reply of the `resume` update. */
export const DecisionAcceptedSchema = z.object({
  interruptId: z.string(),
  /** Every interrupt this decision answered (a shared decision answers all holds of its middleware). */
  decided: z.array(z.string()),
});
export type DecisionAccepted = z.infer<typeof DecisionAcceptedSchema>;
