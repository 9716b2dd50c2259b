/**
 * A worker that failed to load (a module with a syntax error, one that throws at import, a
 * temporal.yaml that does not parse) said in one line that names the file at fault, for
 * `keel dev` to print while the last good worker keeps running. Pure: text in, text out.
 */

/** One line for a load failure, and the file it names (the one to watch for the fix), if it names one. */
export interface LoadFailureLine {
  line: string;
  file?: string;
}

/** `<file>:<line>:<column>: ERROR: <text>`, as esbuild (through tsx) reports a syntax error. */
const TRANSFORM_ERROR = /Transform failed with \d+ errors?:\s*\n(\S+?):(\d+):(\d+): ERROR: ([^\n]*)/;
/** Node's `Require stack:` list after a module that was not found: its first entry is the importer. */
const REQUIRE_STACK = /\nRequire stack:\n- ([^\n]+)[\s\S]*$/;
/** A file named as `cannot load <file>:` (load-registry's words) or at the start of a config error. */
const NAMED_FILE = /cannot load (\/[^:\s]+|[A-Za-z]:\\[^:]+):|^(\/[^:\s()]+\.(?:ya?ml|[cm]?[jt]sx?))/;

/** Summarizes a load error's message in one line naming the file at fault. */
export function loadFailureLine(message: string): LoadFailureLine {
  const transform = TRANSFORM_ERROR.exec(message);
  if (transform) {
    const [, file, line, column, text] = transform as unknown as [string, string, string, string, string];
    return { line: `${file}:${line}:${column}: ${text.trim()}`, file };
  }
  let text = message;
  let importer: string | undefined;
  const stack = REQUIRE_STACK.exec(text);
  if (stack) {
    importer = stack[1]!.trim();
    text = `${text.slice(0, stack.index)} (imported by ${importer})`;
  }
  const line = text.replace(/\s*\n\s*/g, ' ').trim();
  const named = NAMED_FILE.exec(line);
  const file = importer ?? named?.[1] ?? named?.[2];
  return { line, ...(file !== undefined ? { file } : {}) };
}
