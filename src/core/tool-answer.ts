/**
 * A workflow-local tool's answer with metadata for its tool response part (Skills marks an
 * activation with `skillActivation`). Pure: safe in workflow code; never crosses an activity.
 */
const MARK = '__keelToolAnswer';

/** An output and the metadata its response part carries. */
export interface ToolAnswer {
  readonly [MARK]: true;
  readonly output: unknown;
  readonly metadata: Record<string, unknown>;
}

/** Answers a call with `output`, its response part carrying `metadata`. */
export function toolAnswer(output: unknown, metadata: Record<string, unknown>): ToolAnswer {
  return { [MARK]: true, output, metadata };
}

/** True for a value made by `toolAnswer`. */
export function isToolAnswer(value: unknown): value is ToolAnswer {
  return typeof value === 'object' && value !== null && (value as Record<string, unknown>)[MARK] === true;
}
