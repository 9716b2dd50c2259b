/**
 * Turns zod failures into messages that name the field and what was expected.
 * Pure: safe in workflow code.
 */
import type { z } from 'zod';

/** Renders a zod path as `a.b[0].c`. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out ? `.${String(segment)}` : String(segment);
  }
  return out;
}

/** One line per issue: `<path>: <what was expected>`. */
export function describeZodError(error: z.ZodError, root = ''): string {
  return error.issues
    .map((issue) => {
      const path = formatPath([...(root ? [root] : []), ...issue.path]);
      return `${path || '(root)'}: ${issue.message}`;
    })
    .join('; ');
}

/** The path of the first issue, for structured error details. */
export function firstIssuePath(error: z.ZodError): string {
  return formatPath(error.issues[0]?.path ?? []);
}
