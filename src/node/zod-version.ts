/** The version of the zod a project has installed, for the line that refuses a zod 3 schema. Node side. */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** The version of `zod` as resolved from `from` (the working directory by default); undefined when there is none. */
export function installedZodVersion(from: string = process.cwd()): string | undefined {
  try {
    const path = createRequire(join(from, 'package.json')).resolve('zod/package.json');
    const { version } = JSON.parse(readFileSync(path, 'utf8')) as { version?: unknown };
    return typeof version === 'string' ? version : undefined;
  } catch {
    return undefined;
  }
}
