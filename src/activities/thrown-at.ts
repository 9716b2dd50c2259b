/**
 * Where in the user's code an error was thrown: the first frame of its stack that is neither
 * keel's own code nor a dependency's (node_modules) nor Node's, as `file:line:column`, so a
 * tool that throws says where (tsx maps a TypeScript module's frames to its source). Node side.
 */
import { isAbsolute, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGE_ROOT } from '../node/package-root';

/** keel's own code, from source or built: frames there are never the user's. */
const KEEL_CODE = ['src', 'dist', 'bin'].map((folder) => join(PACKAGE_ROOT, folder) + sep);

/** A stack line's file, line and column: `at fn (file:1:2)`, `at file:1:2`, `at async fn (file:///x.ts:1:2)`. */
const FRAME = /^\s*at (?:.*? \()?(.+?):(\d+):(\d+)\)?$/;

function fileOf(location: string): string | undefined {
  if (location.startsWith('file://')) {
    try {
      return fileURLToPath(location);
    } catch {
      return undefined;
    }
  }
  return isAbsolute(location) ? location : undefined;
}

function isUsers(file: string): boolean {
  return !file.split(sep).includes('node_modules') && !KEEL_CODE.some((folder) => file.startsWith(folder));
}

/**
 * `file:line:column` of the first frame of `error`'s stack in the user's code: the file relative
 * to `baseDir` when it lies inside it, else absolute. Undefined when the error has no stack or no
 * frame is the user's (a tool keel provides, an MCP server's answer).
 */
export function thrownAt(error: unknown, { baseDir }: { baseDir: string }): string | undefined {
  const stack = error instanceof Error && typeof error.stack === 'string' ? error.stack : undefined;
  for (const line of stack?.split('\n').slice(1) ?? []) {
    const match = FRAME.exec(line);
    const file = match ? fileOf(match[1]!) : undefined;
    if (!file || !isUsers(file)) continue;
    const shown = relative(baseDir, file);
    return `${shown === '..' || shown.startsWith(`..${sep}`) || isAbsolute(shown) ? file : shown}:${match![2]}:${match![3]}`;
  }
  return undefined;
}
