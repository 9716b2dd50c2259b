/**
 * Builds the `{ name, config }` ref a middleware factory returns, validating the config
 * with the middleware's schema so a mistake surfaces where the agent is defined.
 */
import type { z } from 'zod';
import { KeelError } from '../core/errors';
import type { MiddlewareRef } from '../core/run';
import { describeZodError } from '../core/schema-errors';
import type { MiddlewareDefinition } from './types';

/** A validated ref; a bad config throws INVALID_ARGUMENT naming the field. */
export function middlewareRef<Schema extends z.ZodType>(definition: MiddlewareDefinition<Schema>, config: z.input<Schema>): MiddlewareRef {
  const parsed = definition.configSchema.safeParse(config);
  if (!parsed.success) {
    throw new KeelError('INVALID_ARGUMENT', `invalid config for middleware "${definition.name}": ${describeZodError(parsed.error, 'config')}`);
  }
  return { name: definition.name, config: JSON.parse(JSON.stringify(parsed.data)) as Record<string, unknown> };
}
