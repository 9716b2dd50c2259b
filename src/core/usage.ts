/**
 * Usage: what model and tool calls spent, its schema, the one check every report passes (a
 * model's answer, whatever its provider, and a tool's `reportUsage`, in the activity; a usage
 * report another run signals, in the workflow), and the sum. A count is a finite number from 0
 * up to the most keel adds exactly, so no report can lower a Budget, and a sum that would no
 * longer be exact is an error, never a rounded, infinite or `null` count. Custom counters keep
 * any key (`__proto__` and `constructor` included). Pure: safe in workflow code.
 */
import { z } from 'zod';
import { KeelError } from './errors';
import { describeZodError, firstIssuePath } from './schema-errors';

/**
 * The numeric usage fields of the reference's GenerationUsage, by their JSON names, and keel's
 * `cost` (USD: a model call's from the model's price, a tool's as it reported it).
 */
export const USAGE_FIELDS = [
  'inputTokens',
  'outputTokens',
  'totalTokens',
  'thoughtsTokens',
  'cachedContentTokens',
  'inputCharacters',
  'outputCharacters',
  'inputImages',
  'outputImages',
  'inputVideos',
  'outputVideos',
  'inputAudioFiles',
  'outputAudioFiles',
  'cost',
] as const;
export type UsageField = (typeof USAGE_FIELDS)[number];

/** The largest count (tokens, images, a custom counter) keel adds exactly: 2^53 - 1. */
export const MAX_USAGE_COUNT = Number.MAX_SAFE_INTEGER;

/**
 * The largest `cost` keel adds exactly, in USD: sums of costs are kept to the nano-dollar
 * (0.1 + 0.2 is 0.3), which is exact up to 2^53 - 1 nano-dollars, about 9 million USD.
 */
export const MAX_USAGE_COST = Number.MAX_SAFE_INTEGER / 1e9;

const shown = (value: unknown): string => (typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? String(value)));

/** One count: a finite number from 0 to `max` (zod 4 numbers are finite: NaN and Infinity fail the type). */
function count(max: number) {
  return z
    .number({ error: (issue) => `must be a finite number (got ${shown(issue.input)})` })
    .min(0, { error: (issue) => `must not be negative (got ${shown(issue.input)})` })
    .max(max, { error: (issue) => `must be at most ${max} (got ${shown(issue.input)})` });
}
const Count = count(MAX_USAGE_COUNT);
const Cost = count(MAX_USAGE_COST);

/**
 * Custom counters, key by key. Not a `z.record`: zod leaves a `__proto__` key out of what it
 * parses, so the object is checked and passed through as it is (JSON-plain, any key kept).
 */
const CustomCountersSchema = z
  .custom<Record<string, number>>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), {
    error: (issue) => `must be an object of counters (got ${shown(issue.input)})`,
  })
  .superRefine((counters, context) => {
    for (const [key, value] of Object.entries(counters)) {
      const checked = Count.safeParse(value);
      if (!checked.success) for (const issue of checked.error.issues) context.addIssue({ code: 'custom', message: issue.message, path: [key] });
    }
  })
  .meta({ type: 'object', additionalProperties: { type: 'number', minimum: 0, maximum: MAX_USAGE_COUNT } });

/**
 * Usage, as the reference counts it (every GenerationUsage field); `custom` holds other
 * counters. `outputTokens` leaves out `thoughtsTokens`; `inputTokens` includes `cachedContentTokens`
 * (the input read from the provider's cache); `cost` is in USD. Every count is finite, not
 * negative, and at most MAX_USAGE_COUNT (`cost`: MAX_USAGE_COST).
 */
export const UsageSchema = z.object({
  ...(Object.fromEntries(USAGE_FIELDS.map((field) => [field, (field === 'cost' ? Cost : Count).optional()])) as Record<
    UsageField,
    z.ZodOptional<typeof Count>
  >),
  custom: CustomCountersSchema.optional(),
});
export type Usage = z.infer<typeof UsageSchema>;

/** What reported usage: a model or a tool (named in the error), or another run of the tree (`from`: what it was). */
export type UsageSource = { modelName: string } | { toolName: string } | { from: string };

function describeSource(source: UsageSource): string {
  if ('modelName' in source) return `model "${source.modelName}"`;
  if ('toolName' in source) return `tool "${source.toolName}"`;
  return source.from;
}

/**
 * The status of usage keel cannot count: DATA_LOSS. The report comes from outside keel's
 * control (a provider's answer, a tool's code), so it is not keel's INTERNAL failure nor the
 * caller's INVALID_ARGUMENT; counting it would corrupt the run's record of what it spent (a
 * negative cost lowers a Budget, an overflow reads as no cost), and a sum past what keel adds
 * exactly would lose part of it. Neither Retry nor Fallback acts on it by default: the same
 * provider would answer the same way, and the run must not go on with a count it cannot trust.
 */
export const USAGE_ERROR_STATUS = 'DATA_LOSS';

/**
 * The usage `source` reported, checked (the one check of usage from anywhere): known fields
 * only, each a finite number from 0 to its bound, custom counters too. Otherwise throws a
 * DATA_LOSS KeelError naming the source and the field.
 */
export function checkedUsage(usage: unknown, source: UsageSource): Usage {
  const parsed = UsageSchema.strict().safeParse(usage ?? {});
  if (parsed.success) return parsed.data;
  throw new KeelError(USAGE_ERROR_STATUS, `${describeSource(source)} reported usage keel cannot count: ${describeZodError(parsed.error, 'usage')}`, {
    ...source,
    path: ['usage', firstIssuePath(parsed.error)].filter(Boolean).join('.'),
  });
}

/** `value` when it is a count keel holds exactly; otherwise the sum is an error (DATA_LOSS), naming the field and what was added. */
function exact(value: number, max: number, field: string, adding: string): number {
  if (value >= 0 && value <= max) return value;
  throw new KeelError(
    USAGE_ERROR_STATUS,
    `adding ${adding} would take ${field} to ${value}, past ${max}, the most keel counts exactly; the run's usage cannot be counted`,
    { path: field },
  );
}

/**
 * Adds two usages field by field (custom counters by key, any key kept). `adding` names what
 * `b` is, for the error a sum past MAX_USAGE_COUNT (`cost`: MAX_USAGE_COST) throws.
 */
export function addUsage(a: Usage, b: Usage, adding = 'this usage'): Usage {
  const sum: Usage = {};
  for (const field of USAGE_FIELDS) {
    if (a[field] === undefined && b[field] === undefined) continue;
    const total = (a[field] ?? 0) + (b[field] ?? 0);
    // USD amounts: rounded to 1e-9 so that a sum of prices reads as written (0.1 + 0.2 is 0.3).
    sum[field] =
      field === 'cost' ? exact(Math.round(total * 1e9) / 1e9, MAX_USAGE_COST, 'usage.cost', adding) : exact(total, MAX_USAGE_COUNT, `usage.${field}`, adding);
  }
  if (a.custom || b.custom) {
    // A Map, then entries: a key such as `__proto__` stays an own key of the JSON-plain result.
    const totals = new Map(Object.entries(a.custom ?? {}));
    for (const [key, value] of Object.entries(b.custom ?? {})) {
      totals.set(key, exact((totals.get(key) ?? 0) + value, MAX_USAGE_COUNT, `usage.custom.${key}`, adding));
    }
    sum.custom = Object.fromEntries(totals);
  }
  return sum;
}
