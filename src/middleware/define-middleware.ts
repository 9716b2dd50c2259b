/**
 * `defineMiddleware`: the one way to write a middleware, built-ins included. One definition
 * gives a typed, callable factory: `myGate({ ... })` validates the config with the
 * middleware's schema, where the agent is defined, and returns the `{ name, config }` ref
 * that `use: [...]` takes. Pure: the same module runs in the workflow.
 */
import type { z } from 'zod';
import { KeelError } from '../core/errors';
import type { HoldKind } from '../core/holds';
import type { MiddlewareRef } from '../core/run';
import { describeZodError } from '../core/schema-errors';
import { zod3Refusal, zodSchemaKind } from '../core/zod-schema';
import type { MiddlewareDefinition } from './types';

/** A middleware factory: call it with a config to get a ref for `use: [...]`. */
export type MiddlewareFactory<
  Schema extends z.ZodType = z.ZodType,
  Carry extends z.ZodType = z.ZodType,
  Holds extends readonly HoldKind[] = readonly HoldKind[],
> = ((...config: Record<string, never> extends z.input<Schema> ? [config?: z.input<Schema>] : [config: z.input<Schema>]) => MiddlewareRef) & {
  /** The definition the factory was made from (what the worker registers). */
  readonly definition: MiddlewareDefinition<Schema, Carry, Holds>;
};

/** A validated ref; a bad config throws INVALID_ARGUMENT naming the middleware and the field. */
export function middlewareRef<Schema extends z.ZodType>(definition: MiddlewareDefinition<Schema>, config: unknown): MiddlewareRef {
  const parsed = definition.configSchema.safeParse(config ?? {});
  if (!parsed.success) {
    throw new KeelError('INVALID_ARGUMENT', `invalid config for middleware "${definition.name}": ${describeZodError(parsed.error, 'config')}`);
  }
  return { name: definition.name, config: JSON.parse(JSON.stringify(parsed.data ?? {})) as Record<string, unknown> };
}

/**
 * Defines a middleware: `export const myGate = defineMiddleware({ name: 'myGate',
 * description, configSchema, create(config, context) { return { wrapTool } } })`, then
 * `use: [myGate({ ... })]`. Register it on workers by listing its module under
 * `middlewareModules` (every factory the module exports is registered).
 */
export function defineMiddleware<Schema extends z.ZodType, Carry extends z.ZodType = z.ZodType, Holds extends readonly HoldKind[] = readonly HoldKind[]>(
  definition: MiddlewareDefinition<Schema, Carry, Holds>,
): MiddlewareFactory<Schema, Carry, Holds> {
  if (zodSchemaKind(definition.configSchema) === 'zod3') throw new TypeError(zod3Refusal(`middleware "${definition.name}".configSchema`));
  if (definition.carrySchema && zodSchemaKind(definition.carrySchema) === 'zod3')
    throw new TypeError(zod3Refusal(`middleware "${definition.name}".carrySchema`));
  for (const hold of definition.holds ?? []) checkHoldSchemas(hold, `middleware "${definition.name}"`);
  const factory = (config?: unknown) => middlewareRef(definition, config);
  return Object.assign(factory, { definition });
}

/** A hold kind's data and decision schemas must be zod 4: a zod 3 one is refused naming where it is. */
function checkHoldSchemas(hold: HoldKind, where: string): void {
  for (const field of ['data', 'decision'] as const) {
    if (zodSchemaKind(hold[field]) === 'zod3') throw new TypeError(zod3Refusal(`${where} hold "${hold.kind}".${field}`));
  }
}

/** True for a factory made by `defineMiddleware`. */
export function isMiddlewareFactory(value: unknown): value is MiddlewareFactory {
  return typeof value === 'function' && typeof (value as { definition?: { name?: unknown; create?: unknown } }).definition?.create === 'function';
}
