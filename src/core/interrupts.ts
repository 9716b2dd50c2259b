/**
 * Interrupts: a tool call held for a decision. A tool or a wrapTool hook raises a hold
 * (`ToolInterrupt`); the run records it as a pending interrupt and waits for a decision,
 * or (interruptMode 'return') ends with the interrupted parts. Also the model-visible
 * tool failure a hook can answer a call with (`toolFail`). Pure: safe in workflow code.
 */
import { z } from 'zod';
import { KeelError } from './errors';

/** The stage name a tool's own interrupt is raised by. */
export const TOOL_STAGE = 'tool';

/** Failure type with which a tool activity asks for an interrupt (ToolContext.interrupt). */
export const TOOL_INTERRUPT_FAILURE = 'KEEL_INTERRUPT';

const INTERRUPT_MARK = '__keelToolInterrupt';

/** A held tool call, thrown by the stage that holds it. */
export class ToolInterrupt extends Error {
  readonly [INTERRUPT_MARK] = true;
  constructor(
    /** What kind of hold: 'approval', 'budget', 'tool', ... */
    readonly kind: string,
    /** JSON object shown to whoever decides (message, judge, spent, ...). */
    readonly data: Record<string, unknown>,
    /** The middleware name that raised it, or TOOL_STAGE for the tool itself. */
    readonly raisedBy: string,
    /** Position of the raising stage in the wrapTool chain (the tool: after every hook). */
    readonly stageIndex: number,
  ) {
    super(typeof data.message === 'string' ? data.message : `tool call held (${kind})`);
    this.name = 'ToolInterrupt';
  }

  /** True for a ToolInterrupt from any V8 context. */
  static isInstance(error: unknown): error is ToolInterrupt {
    return typeof error === 'object' && error !== null && (error as Record<string, unknown>)[INTERRUPT_MARK] === true;
  }
}

/**
 * An error that answers the tool call with `{ "error": message }` for the model to see,
 * instead of failing the run (a denial, for example). The reference's `tool.Fail`.
 */
export function toolFail(message: string): KeelError {
  return new KeelError('ABORTED', message, { modelVisible: true });
}

/** True for an error made by `toolFail`. */
export function isToolFail(error: unknown): error is KeelError {
  return KeelError.isInstance(error) && error.details.modelVisible === true;
}

/** A decision on a pending interrupt, as the `resume` update or signal carries it. */
export const DecisionSchema = z.union([
  z.object({ interruptId: z.string().min(1), approved: z.boolean(), reason: z.string().optional() }).strict(),
  z.object({ interruptId: z.string().min(1), respond: z.unknown() }).strict(),
  z.object({ interruptId: z.string().min(1), restart: z.union([z.literal(true), z.record(z.string(), z.unknown())]) }).strict(),
]);
export type Decision = z.infer<typeof DecisionSchema>;

/** Where a restart of a held call is headed, as the wrapTool chain sees it. */
export interface ResumeTarget {
  /** The stage that raised the hold. */
  raisedBy: string;
  /** The decision's payload; `true` for a bare restart. */
  payload: Record<string, unknown> | true;
  /** Index in the chain of the stage that raised the hold (hooks.length for the tool). */
  stageIndex: number;
}

/** The reply of the `resume` update. */
export interface DecisionAccepted {
  interruptId: string;
  /** Every interrupt this decision answered (a budget decision answers all budget holds). */
  decided: string[];
}
