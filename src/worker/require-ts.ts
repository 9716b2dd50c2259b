/**
 * Loads a module on demand with CommonJS `require`, TypeScript included (tsx's CommonJS hook,
 * registered once): for what is slow to load and needed by some commands only (the worker,
 * the AWS SDK), and for the modules a temporal.yaml lists. Node side.
 */
import { createRequire } from 'node:module';

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
