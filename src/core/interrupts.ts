/**
 * Interrupts: a tool call held for a decision. A tool or a wrapTool hook raises a hold
 * (`ToolInterrupt`, built by the framework: hooks call `context.interrupt(data)`, tools
 * `ctx.interrupt(data)`); the run records it as a pending hold and waits for a
 * decision, or (interruptMode 'return') ends with the interrupted parts. Also the
 * model-visible tool failure a hook can answer a call with (`toolFail`).
 * Pure: safe in workflow code.
 */
import { KeelError } from './errors';
import { undeclaredHold, type HoldKind } from './holds';

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
  /** The kind of the hold, when it is not the first its middleware declares. */
  interruptKind: 'interruptKind',
} as const;

const INTERRUPT_MARK = '__keelToolInterrupt';

/** What a hold carries: who raised it, where, and under which policy. */
export interface ToolInterruptOptions {
  /** JSON object shown to whoever decides, as the raising stage gave it (checked against its kind's data schema). */
  data: Record<string, unknown>;
  /** The middleware name that raised it, or TOOL_STAGE for the tool itself. */
  raisedBy: string;
  /** Position of the raising stage in the wrapTool chain (the tool: after every hook). */
  stage: number;
  /** The kind of hold, as the raiser declared it (default: an undeclared hold named after the raiser). */
  hold?: HoldKind;
  /** True when the raiser named a kind other than its first (recorded on the held part, so a resume finds it). */
  kindNamed?: boolean;
}

/** A held tool call, thrown by the stage that holds it. Built by the framework. */
export class ToolInterrupt extends Error {
  readonly [INTERRUPT_MARK] = true;
  readonly data: Record<string, unknown>;
  readonly raisedBy: string;
  readonly stage: number;
  readonly hold: HoldKind;
  readonly kindNamed: boolean;

  constructor({ data, raisedBy, stage, hold = undeclaredHold(raisedBy), kindNamed = false }: ToolInterruptOptions) {
    super(typeof data.message === 'string' ? data.message : `tool call held by ${raisedBy}`);
    this.name = 'ToolInterrupt';
    this.data = data;
    this.raisedBy = raisedBy;
    this.stage = stage;
    this.hold = hold;
    this.kindNamed = kindNamed;
  }

  /** `kind` as pending holds show it. */
  get kind(): string {
    return this.hold.kind;
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
