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
 * How far a value got into one branch of a union: the deepest issue path, then whether the
 * value at least had the branch's type (a failed check rather than a wrong type).
 */
function progress(branch: readonly Issue[]): number {
  if (branch.length === 0) return -1;
  const depth = Math.max(...branch.map((issue) => issue.path.length));
  return depth * 2 + (branch.some((issue) => issue.code !== 'invalid_type' && issue.code !== 'invalid_union') ? 1 : 0);
}

/**
 * The issues to report: for a value that matched no branch of a union, the issues of the
 * branch it got furthest into, so a bad field inside one shape (or a failed check of the
 * right type) is named instead of "Invalid input".
 */
function reportedIssues(issues: readonly Issue[], prefix: ReadonlyArray<PropertyKey> = []): Array<{ path: PropertyKey[]; message: string }> {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      const furthest = issue.errors.reduce((best, branch) => (progress(branch) > progress(best) ? branch : best));
      if (progress(furthest) > 0) return reportedIssues(furthest, path);
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
