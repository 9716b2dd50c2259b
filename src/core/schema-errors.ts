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

type Issue = z.core.$ZodIssue;

/**
 * The issues to report: for a value that matched no branch of a union, the issues of the
 * branch it got furthest into (the deepest path), so a bad field deep inside one shape is
 * named instead of "Invalid input".
 */
function reportedIssues(issues: readonly Issue[], prefix: ReadonlyArray<PropertyKey> = []): Array<{ path: PropertyKey[]; message: string }> {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      const depth = (branch: readonly Issue[]) => Math.max(...branch.map((inner) => inner.path.length));
      const furthest = issue.errors.reduce((best, branch) => (branch.length && depth(branch) > depth(best) ? branch : best));
      if (furthest.length && depth(furthest) > 0) return reportedIssues(furthest, path);
    }
    return [{ path, message: issue.message }];
  });
}

/** One line per issue: `<path>: <what was expected>`. */
export function describeZodError(error: z.ZodError, root = ''): string {
  return reportedIssues(error.issues)
    .map(({ path, message }) => `${formatPath([...(root ? [root] : []), ...path]) || '(root)'}: ${message}`)
    .join('; ');
}

/** The path of the first issue, for structured error details. */
export function firstIssuePath(error: z.ZodError): string {
  return formatPath(error.issues[0]?.path ?? []);
}
