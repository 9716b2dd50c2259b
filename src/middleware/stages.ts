/**
 * A run's middleware stages: the step that turns `{ name, config }` refs into per-run stages
 * (config checked, hooks created in order), and what every stage's context shares. Pure: runs
 * in the workflow, so a run's middleware is fully described by its JSON.
 */
import { KeelError } from '../core/errors';
import type { ToolInterrupt } from '../core/interrupts';
import type { HoldKind } from '../core/holds';
import { describeZodError } from '../core/schema-errors';
import type { MiddlewareRef } from '../core/run';
import { holdKinds, raiseHold } from './hold-kinds';
import type { MiddlewareContext, MiddlewareDefinition, MiddlewareHooks } from './types';

/** One middleware of a run: its position, name, the kinds of hold it raises and its hooks. */
export interface MiddlewareStage {
  index: number;
  name: string;
  /** The kinds of hold it declares (at least one: an undeclared hold named after it when it declares none). */
  holds: readonly [HoldKind, ...HoldKind[]];
  hooks: MiddlewareHooks;
}

/** What every middleware of a run shares; each gets it with its own stage fields. */
export type SharedMiddlewareContext = Omit<MiddlewareContext, 'stageIndex' | 'interrupt' | 'holdModelCall' | 'shared' | 'resumedHolds' | 'carried'> & {
  /** Holds the run before its next model call with this interrupt (undefined: the run cannot wait). */
  holdModelCall?: (interrupt: ToolInterrupt) => Promise<unknown>;
  /** The resumed holds addressed to the stage at `stageIndex` (see MiddlewareContext.resumedHolds). */
  resumedHolds: (stageIndex: number) => unknown[];
  /** What the stage with this `carryKey` carried from the previous run of the chain. */
  carried?: (key: string) => unknown;
};

/** The key a stage's carried state goes under: its position and name. */
export const carryKey = (index: number, name: string) => `${index}:${name}`;

/**
 * What a stage carried from the previous run of the chain, parsed by its middleware's
 * `carrySchema` (a run's input may have been written by anyone): a value it refuses is
 * INVALID_ARGUMENT naming the middleware and the field.
 */
function carriedState(definition: MiddlewareDefinition, index: number, carried: unknown): unknown {
  if (carried === undefined || !definition.carrySchema) return carried;
  const parsed = definition.carrySchema.safeParse(carried);
  if (parsed.success) return parsed.data;
  throw new KeelError(
    'INVALID_ARGUMENT',
    `middleware "${definition.name}" (use[${index}]): what the previous run of the chain carried does not match its carrySchema: ${describeZodError(parsed.error, 'carried')}`,
  );
}

/** The names in `catalog` without the reference aliases, sorted (for messages). */
export function middlewareNames(catalog: Readonly<Record<string, MiddlewareDefinition>>): string[] {
  return Object.keys(catalog)
    .filter((name) => !name.includes('/') || catalog[name]!.name === name)
    .sort();
}

/**
 * Validates each ref's config against its middleware's schema and creates its hooks, in
 * order (first = outermost). Unknown name → NOT_FOUND; bad config → INVALID_ARGUMENT naming
 * the middleware and the field.
 */
export async function instantiateMiddleware(
  refs: readonly MiddlewareRef[],
  context: SharedMiddlewareContext,
  catalog: Readonly<Record<string, MiddlewareDefinition>>,
  parts: ReadonlyMap<string, unknown> = new Map(),
): Promise<MiddlewareStage[]> {
  const sharedState = new Map<string, object>();
  const stages: MiddlewareStage[] = [];
  // One after another, in order: a middleware's create may wait on activities (Skills scans).
  for (const [index, ref] of refs.entries()) {
    const definition = catalog[ref.name];
    if (!definition) {
      const known = middlewareNames(catalog);
      throw new KeelError(
        'NOT_FOUND',
        `middleware "${ref.name}" (use[${index}]) is not registered; known middleware: ${known.length ? known.join(', ') : '(none)'}`,
      );
    }
    const parsed = definition.configSchema.safeParse(ref.config ?? {});
    if (!parsed.success) {
      throw new KeelError('INVALID_ARGUMENT', `invalid config for middleware "${ref.name}" (use[${index}]): ${describeZodError(parsed.error, 'config')}`);
    }
    const stage = { index, name: definition.name, holds: holdKinds(definition) };
    // A built-in's create takes what its feature lends it in this run as a third argument (src/features/feature.ts).
    const create = definition.create as (config: unknown, context: MiddlewareContext, part: unknown) => ReturnType<MiddlewareDefinition['create']>;
    const hooks = await create(
      parsed.data,
      {
        ...context,
        carried: carriedState(definition, index, context.carried?.(carryKey(index, definition.name))),
        stageIndex: index,
        resumedHolds: () => context.resumedHolds(index),
        interrupt: (data, kind) => {
          throw raiseHold(stage, data, kind);
        },
        holdModelCall: context.holdModelCall ? (data, kind) => context.holdModelCall!(raiseHold(stage, data, kind)) : undefined,
        shared: <T extends object>(init: () => T): T => {
          if (!sharedState.has(definition.name)) sharedState.set(definition.name, init());
          return sharedState.get(definition.name) as T;
        },
      },
      parts.get(definition.name),
    );
    stages.push({ ...stage, hooks });
  }
  return stages;
}
