/**
 * The built-in middleware, by name, and the step that turns `{ name, config }` refs into
 * hooks. Pure: runs in the workflow, so a run's middleware is fully described by its JSON.
 */
import { KeelError } from '../core/errors';
import { describeZodError } from '../core/schema-errors';
import type { MiddlewareRef } from '../core/run';
import type { MiddlewareContext, MiddlewareDefinition, MiddlewareHooks } from './types';

/** Every middleware keel knows, by name. Later issues add Retry, Fallback, ... here. */
export const BUILTIN_MIDDLEWARE: Readonly<Record<string, MiddlewareDefinition>> = {};

/**
 * Validates each ref's config against its middleware's schema and creates its hooks,
 * in order (first = outermost). Unknown name → NOT_FOUND; bad config → INVALID_ARGUMENT
 * naming the middleware and the field.
 */
export function instantiateMiddleware(
  refs: readonly MiddlewareRef[],
  context: MiddlewareContext,
  registry: Readonly<Record<string, MiddlewareDefinition>> = BUILTIN_MIDDLEWARE,
): MiddlewareHooks[] {
  return refs.map((ref, index) => {
    const definition = registry[ref.name];
    if (!definition) {
      const known = Object.keys(registry).sort();
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
    return definition.create(parsed.data, context);
  });
}
