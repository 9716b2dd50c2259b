/**
 * The middleware keel knows, by name (the built-ins, plus any a `middlewareModules` file
 * registers), and the step that turns `{ name, config }` refs into per-run stages. Pure:
 * runs in the workflow, so a run's middleware is fully described by its JSON.
 */
import type { z } from 'zod';
import { KeelError } from '../core/errors';
import { ToolInterrupt, holdData } from '../core/interrupts';
import { undeclaredHold, type HoldKind } from '../core/holds';
import { describeZodError } from '../core/schema-errors';
import type { MiddlewareRef } from '../core/run';
import { agents } from './agents';
import { artifacts } from './artifacts';
import { budget } from './budget';
import { contextCompression } from './context-compression';
import { isMiddlewareFactory, type MiddlewareFactory } from './define-middleware';
import { fallback } from './fallback';
import { skills } from './skills';
import { filesystem } from './filesystem';
import { retry } from './retry';
import { softToolErrors } from './soft-tool-errors';
import { toolApproval } from './tool-approval';
import type { MiddlewareContext, MiddlewareDefinition, MiddlewareHooks } from './types';

/** Built-in middleware with the reference's name for each (stable ones under genkit-middleware/, experimental under genkit-middleware-exp/). */
const builtins: Array<[MiddlewareFactory, string]> = [
  [retry as MiddlewareFactory, 'genkit-middleware/retry'],
  [fallback as MiddlewareFactory, 'genkit-middleware/fallback'],
  [softToolErrors as MiddlewareFactory, 'genkit-middleware/softToolErrors'],
  [toolApproval as MiddlewareFactory, 'genkit-middleware/toolApproval'],
  [budget as MiddlewareFactory, 'genkit-middleware-exp/budget'],
  [artifacts as MiddlewareFactory, 'genkit-middleware-exp/artifacts'],
  [agents as MiddlewareFactory, 'genkit-middleware-exp/agents'],
  [filesystem as MiddlewareFactory, 'genkit-middleware/filesystem'],
  [skills as MiddlewareFactory, 'genkit-middleware/skills'],
  [contextCompression as MiddlewareFactory, 'genkit-middleware-exp/contextCompression'],
];

/**
 * Every middleware keel knows, by name; each also answers to the reference's name so
 * configs written for Genkit keep working.
 */
export const BUILTIN_MIDDLEWARE: Readonly<Record<string, MiddlewareDefinition>> = Object.fromEntries(
  builtins.flatMap(([factory, referenceName]) => [
    [factory.definition.name, factory.definition],
    [referenceName, factory.definition],
  ]),
);

const registered: Record<string, MiddlewareDefinition> = { ...BUILTIN_MIDDLEWARE };

/**
 * Registers a middleware (a `defineMiddleware` factory, or its definition) under its name.
 * Modules listed under `middlewareModules` have every exported factory registered for them;
 * call this for any other. Such modules are bundled with the workflow, so they must be
 * deterministic (no I/O, clock or randomness except through @temporalio/workflow).
 */
export function registerMiddleware<Schema extends z.ZodType>(middleware: MiddlewareFactory<Schema> | MiddlewareDefinition<Schema>): void {
  const definition = (isMiddlewareFactory(middleware) ? middleware.definition : middleware) as unknown as MiddlewareDefinition;
  const existing = registered[definition.name];
  if (existing && existing !== definition) {
    throw new KeelError('ALREADY_EXISTS', `middleware "${definition.name}" is already registered`);
  }
  registered[definition.name] = definition;
}

/** Registers every middleware factory among a module's exports. */
export function registerExportedMiddleware(moduleExports: Record<string, unknown>): void {
  for (const value of Object.values(moduleExports)) if (isMiddlewareFactory(value)) registerMiddleware(value);
}

/** Every registered middleware, by name (reference aliases included). */
export function registeredMiddleware(): Readonly<Record<string, MiddlewareDefinition>> {
  return registered;
}

/** Registered names without the reference aliases, sorted (for messages). */
export function middlewareNames(registry: Readonly<Record<string, MiddlewareDefinition>> = registered): string[] {
  return Object.keys(registry)
    .filter((name) => !name.includes('/') || registry[name]!.name === name)
    .sort();
}

/** One middleware of a run: its position, name, the kinds of hold it raises and its hooks. */
export interface MiddlewareStage {
  index: number;
  name: string;
  /** The kinds of hold it declares (at least one: an undeclared hold named after it when it declares none). */
  holds: readonly [HoldKind, ...HoldKind[]];
  hooks: MiddlewareHooks;
}

/** The kinds of hold a middleware raises: the ones it declares, or one undeclared kind named after it. */
export function holdKinds(definition: MiddlewareDefinition): readonly [HoldKind, ...HoldKind[]] {
  const declared = definition.holds ?? [];
  return declared.length ? (declared as [HoldKind, ...HoldKind[]]) : [undeclaredHold(definition.name)];
}

/** The kind named `kind` among a stage's holds (its first when `kind` is absent); undefined when it declares no such kind. */
export function holdKindOf(holds: readonly [HoldKind, ...HoldKind[]], kind?: string): HoldKind | undefined {
  return kind === undefined ? holds[0] : holds.find((hold) => hold.kind === kind);
}

/** The kind of hold `kind` raised by the registered middleware `raisedBy` (a sub-agent's hold shown here), if this worker knows it. */
export function registeredHoldKind(
  raisedBy: string,
  kind: string,
  registry: Readonly<Record<string, MiddlewareDefinition>> = registered,
): HoldKind | undefined {
  const definition = registry[raisedBy];
  return definition ? holdKindOf(holdKinds(definition), kind) : undefined;
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

/** What every middleware of a run shares; each gets it with its own stage fields. */
export type SharedMiddlewareContext = Omit<
  MiddlewareContext,
  'stageIndex' | 'stageName' | 'interrupt' | 'holdModelCall' | 'shared' | 'resumedHolds' | 'carried'
> & {
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
 * Validates each ref's config against its middleware's schema and creates its hooks, in
 * order (first = outermost). Unknown name → NOT_FOUND; bad config → INVALID_ARGUMENT naming
 * the middleware and the field.
 */
export async function instantiateMiddleware(
  refs: readonly MiddlewareRef[],
  context: SharedMiddlewareContext,
  registry: Readonly<Record<string, MiddlewareDefinition>> = registered,
): Promise<MiddlewareStage[]> {
  const sharedState = new Map<string, object>();
  const stages: MiddlewareStage[] = [];
  // One after another, in order: a middleware's create may wait on activities (Skills scans).
  for (const [index, ref] of refs.entries()) {
    const definition = registry[ref.name];
    if (!definition) {
      const known = middlewareNames(registry);
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
    const hooks = await definition.create(parsed.data, {
      ...context,
      carried: context.carried?.(carryKey(index, definition.name)),
      stageIndex: index,
      stageName: definition.name,
      resumedHolds: () => context.resumedHolds(index),
      interrupt: (data, kind) => {
        throw raiseHold(stage, data, kind);
      },
      holdModelCall: context.holdModelCall ? (data, kind) => context.holdModelCall!(raiseHold(stage, data, kind)) : undefined,
      shared: <T extends object>(init: () => T): T => {
        if (!sharedState.has(definition.name)) sharedState.set(definition.name, init());
        return sharedState.get(definition.name) as T;
      },
    });
    stages.push({ ...stage, hooks });
  }
  return stages;
}
