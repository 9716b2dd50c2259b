/**
 * The kinds of hold a run's middleware raise: what each declares (`defineHold`), or one
 * undeclared kind named after a middleware that declares none, and the step that raises one
 * with its data checked. Pure: runs in the workflow.
 */
import { KeelError } from '../core/errors';
import { ToolInterrupt, holdData } from '../core/interrupts';
import { undeclaredHold, type HoldKind } from '../core/holds';
import { describeZodError } from '../core/schema-errors';
import type { MiddlewareDefinition } from './types';

/** The kinds of hold a middleware raises: the ones it declares, or one undeclared kind named after it. */
export function holdKinds(definition: MiddlewareDefinition): readonly [HoldKind, ...HoldKind[]] {
  const declared = definition.holds ?? [];
  return declared.length ? (declared as [HoldKind, ...HoldKind[]]) : [undeclaredHold(definition.name)];
}

/** The kind named `kind` among a stage's holds (its first when `kind` is absent); undefined when it declares no such kind. */
export function holdKindOf(holds: readonly [HoldKind, ...HoldKind[]], kind?: string): HoldKind | undefined {
  return kind === undefined ? holds[0] : holds.find((hold) => hold.kind === kind);
}

/**
 * A hold raised by a stage: its kind (the stage's first unless `kind` names another) and its
 * data, checked against the kind's data schema. A middleware that names a kind it does not
 * declare, or whose data does not fit, fails the call with INVALID_ARGUMENT naming both.
 */
export function raiseHold(
  stage: { name: string; index: number; holds: readonly [HoldKind, ...HoldKind[]] },
  data: Record<string, unknown> | undefined,
  kind?: string,
): ToolInterrupt {
  const hold = holdKindOf(stage.holds, kind);
  if (!hold) {
    throw new KeelError(
      'INVALID_ARGUMENT',
      `middleware "${stage.name}" raised a hold of kind "${kind}", which it does not declare (it declares: ${stage.holds.map((declared) => declared.kind).join(', ')})`,
    );
  }
  const checked = hold.data.safeParse(holdData(data));
  if (!checked.success) {
    throw new KeelError(
      'INVALID_ARGUMENT',
      `middleware "${stage.name}" raised a hold of kind "${hold.kind}" whose data does not fit its schema: ${describeZodError(checked.error, 'data')}`,
    );
  }
  return new ToolInterrupt({ data: holdData(checked.data), raisedBy: stage.name, stage: stage.index, hold, kindNamed: hold !== stage.holds[0] });
}
