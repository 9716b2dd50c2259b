/**
 * Keeps the SDK's deep freeze off the zod schemas a workflow thread's runs share: the last
 * module a thread preloads (see `keelBundleOptions`). Once the preloaded modules are evaluated,
 * the SDK deep-freezes everything their exports reach, and zod writes to a schema after it is
 * built: a method becomes the schema's own, bound, on first read; its parse memoizer rewrites
 * `_zod.parse` on the first parse; lazy internals land on `_zod`; a clone (`.strict()`,
 * `.describe()`) redefines `shape` on the `def` it shares with its source. So this module does
 * the SDK's freeze first, the same walk (own properties; functions frozen, not walked into),
 * and leaves each schema as it is, unwalked: the SDK's freeze stops at what is frozen already.
 * What zod writes to a schema is a function of the schema alone, the same for every run. (The
 * walk reads about 7,300 shared objects; freezing the 1,100 schemas among them instead meant
 * reading every method first, 67,000 bound functions per thread and half its start.) Which
 * modules are shared is the webpack module cache's answer before any run exists (the SDK's
 * cache then holds only shared modules). Workflow code: deterministic, no I/O.
 */
import { z } from 'zod';

/** webpack's table of the bundle's modules, by id. */
declare const __webpack_modules__: Record<string, unknown>;

/** The webpack module cache, as the SDK gives it to the bundle: before any run, the shared modules. */
const moduleCache = (globalThis as { __webpack_module_cache__?: Record<string, object | undefined> }).__webpack_module_cache__;

/** Freezes what the SDK's freeze would reach from `value`, except zod schemas, which stay unfrozen and unwalked. */
function freezeAroundSchemas(value: unknown, seen: WeakSet<object>): void {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value)) return;
  seen.add(value);
  if (Object.isFrozen(value) || value instanceof z.core.$ZodType) return;
  if (typeof value === 'object') {
    for (const key of Reflect.ownKeys(value)) freezeAroundSchemas(Reflect.get(value, key), seen);
  }
  try {
    Object.freeze(value);
  } catch {
    // As for the SDK: some objects cannot be frozen (a typed array with elements).
  }
}

if (moduleCache) {
  const seen = new WeakSet();
  for (const id of Object.keys(__webpack_modules__)) freezeAroundSchemas(moduleCache[id], seen);
}

export {};
