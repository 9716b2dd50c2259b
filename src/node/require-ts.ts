/**
 * Loads a module on demand with CommonJS `require`, TypeScript included (tsx's CommonJS hook,
 * registered once): for what is slow to load and needed by some commands only (the worker,
 * the AWS SDK), and for the modules a temporal.yaml lists. Node side.
 */
import { createRequire } from 'node:module';
import { KeelError } from '../core/errors';

let registered = false;

/** `require(specifier)` relative to `base` (a file path), with .ts support. */
export function requireModule<T = Record<string, unknown>>(specifier: string, base: string): T {
  const load = createRequire(base);
  // A relative module of built keel (dist/*.js) is CommonJS: it needs no hook.
  const ownBuiltModule = base.endsWith('.js') && specifier.startsWith('./');
  if (!registered && !ownBuiltModule) {
    registered = true;
    (load('tsx/cjs/api') as { register: () => void }).register();
  }
  return load(specifier) as T;
}

/** The file `specifier` resolves to from `base` (a file path). */
export function resolveModule(specifier: string, base: string): string {
  return createRequire(base).resolve(specifier);
}

/**
 * Which of `packages` is the one whose absence made `error` (a failed require), if that is
 * what it was; undefined for any other error, a module those packages themselves lack included.
 */
export function missingPackage(error: unknown, packages: readonly string[]): string | undefined {
  if ((error as NodeJS.ErrnoException | undefined)?.code !== 'MODULE_NOT_FOUND') return undefined;
  const message = (error as Error).message;
  return packages.find((name) => message.includes(`'${name}'`) || message.includes(`'${name}/`));
}

/**
 * Loads `subpath` of an optional package keel uses for `purpose` (`serving MCP`; '' for its main
 * module); a package the project has not installed is FAILED_PRECONDITION saying how to install it.
 */
export function requireOptional<T>(name: string, subpath: string, purpose: string): T {
  try {
    return requireModule<T>(subpath ? `${name}/${subpath}` : name, __filename);
  } catch (error) {
    if (!missingPackage(error, [name])) throw error;
    throw new KeelError('FAILED_PRECONDITION', `${purpose} needs ${name}, which is not installed: npm install ${name}`);
  }
}
