/**
 * The middleware keel knows, by name (the built-ins, plus any a `middlewareModules` file
 * registers), and the step that turns `{ name, config }` refs into hooks. Pure: runs in the
 * workflow, so a run's middleware is fully described by its JSON.
 */
import type { z } from 'zod';
import { KeelError } from '../core/errors';
import { describeZodError } from '../core/schema-errors';
import type { MiddlewareRef } from '../core/run';
import { budgetMiddleware } from './budget';
import { fallbackMiddleware } from './fallback';
import { retryMiddleware } from './retry';
import { softToolErrorsMiddleware } from './soft-tool-errors';
import { toolApprovalMiddleware } from './tool-approval';
import type { MiddlewareDefinition, MiddlewareHooks, SharedMiddlewareContext } from './types';

/** Built-in middleware with the reference's name for each (stable ones under genkit-middleware/, experimental under genkit-middleware-exp/). */
const definitions: Array<[MiddlewareDefinition, string]> = [
  [retryMiddleware as MiddlewareDefinition, 'genkit-middleware/retry'],
  [fallbackMiddleware as MiddlewareDefinition, 'genkit-middleware/fallback'],
  [softToolErrorsMiddleware as MiddlewareDefinition, 'genkit-middleware/softToolErrors'],
  [toolApprovalMiddleware as MiddlewareDefinition, 'genkit-middleware/toolApproval'],
  [budgetMiddleware as MiddlewareDefinition, 'genkit-middleware-exp/budget'],
];

/**
 * Every middleware keel knows, by name; each also answers to the reference's name so
 * configs written for Genkit keep working.
 */
export const BUILTIN_MIDDLEWARE: Readonly<Record<string, MiddlewareDefinition>> = Object.fromEntries(
  definitions.flatMap(([definition, referenceName]) => [
    [definition.name, definition],
    [referenceName, definition],
  ]),
);

const registered: Record<string, MiddlewareDefinition> = { ...BUILTIN_MIDDLEWARE };

/**
 * Registers a middleware of your own under `definition.name`. Call it at the top level of
 * a module listed under `middlewareModules` in temporal.yaml: the worker bundles that
 * module with the workflow code, so it must be deterministic (no I/O, clock or randomness
 * except through @temporalio/workflow), like the built-ins.
 */
export function registerMiddleware<Schema extends z.ZodType>(definition: MiddlewareDefinition<Schema>): void {
  const existing = registered[definition.name];
  if (existing && existing !== (definition as unknown as MiddlewareDefinition)) {
    throw new KeelError('ALREADY_EXISTS', `middleware "${definition.name}" is already registered`);
  }
  registered[definition.name] = definition as unknown as MiddlewareDefinition;
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

/**
 * Validates each ref's config against its middleware's schema and creates its hooks,
 * in order (first = outermost). Unknown name → NOT_FOUND; bad config → INVALID_ARGUMENT
 * naming the middleware and the field.
 */
export function instantiateMiddleware(
  refs: readonly MiddlewareRef[],
  context: SharedMiddlewareContext,
  registry: Readonly<Record<string, MiddlewareDefinition>> = registered,
): MiddlewareHooks[] {
  return refs.map((ref, index) => {
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
      throw new KeelError(
        'INVALID_ARGUMENT',
        `invalid config for middleware "${ref.name}" (use[${index}]): ${describeZodError(parsed.error, 'config')}`,
      );
    }
    return definition.create(parsed.data, { ...context, stageIndex: index, stageName: definition.name });
  });
}
