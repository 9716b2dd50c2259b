/**
 * Which zod a schema comes from. keel reads schemas with zod 4 (`_zod`, `z.toJSONSchema`), so
 * it takes a zod 4 schema, including one from `zod/v4` of zod 3.25+ (the same v4 core); a zod 3
 * schema (the main export of zod 3.x) is refused with a line that says so. Pure: the workflow
 * side checks middleware and hold schemas with it too.
 */
import { z } from 'zod';

/** What a value is, as a schema keel may take: a zod 4 schema, a zod 3 schema, or neither. */
export type ZodSchemaKind = 'zod4' | 'zod3' | 'none';

/** Tells a zod 4 schema (it has `_zod`) from a zod 3 one (`_def` and a Standard Schema with vendor zod, no `_zod`). */
export function zodSchemaKind(value: unknown): ZodSchemaKind {
  if (typeof value !== 'object' || value === null) return 'none';
  const schema = value as { _zod?: unknown; _def?: unknown; safeParse?: unknown; '~standard'?: { vendor?: unknown } };
  if (typeof schema._zod === 'object' && schema._zod !== null && typeof schema.safeParse === 'function') return 'zod4';
  if (typeof schema._def === 'object' && schema._def !== null && (schema['~standard']?.vendor === 'zod' || typeof schema.safeParse === 'function'))
    return 'zod3';
  return 'none';
}

/** The one line a zod 3 schema is refused with; `foundVersion` is the installed zod's version when known. */
export function zod3Refusal(where: string, foundVersion?: string): string {
  return `keel needs zod 4 schemas (zod >= 4, or \`zod/v4\` from zod 3.25+); found a zod 3 schema${foundVersion ? ` (zod ${foundVersion})` : ''} for ${where}`;
}

/**
 * A zod 4 schema as JSON Schema (input side). zod 4 copies share their metadata registry, but
 * `zod/v4` of zod 3.25 keeps its own: its `.describe()` and `.meta()` are read from the schema
 * itself so a model still sees them.
 */
export function toInputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    override({ zodSchema, jsonSchema }) {
      if (z.globalRegistry.has(zodSchema)) return;
      const meta = (zodSchema as { meta?: () => unknown }).meta?.();
      if (typeof meta !== 'object' || meta === null) return;
      for (const [key, value] of Object.entries(meta)) if (key !== 'id' && !(key in jsonSchema)) (jsonSchema as Record<string, unknown>)[key] = value;
    },
  });
}
