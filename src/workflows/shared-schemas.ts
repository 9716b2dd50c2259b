/**
 * Keeps the SDK's deep freeze off the insides of the zod schemas a workflow thread's runs
 * share: the last module a thread preloads (see `keelBundleOptions`). Once the preloaded
 * modules are evaluated, the SDK deep-freezes everything their exports reach, and zod writes
 * to a schema's insides after it is built: its parse memoizer rewrites `_zod.parse` on the
 * first parse, lazy internals land on `_zod` on first read, and a clone (`.strict()`,
 * `.describe()`) redefines `shape` on the `def` it shares with its source. So each schema the
 * freeze would reach is frozen here first, shallowly, after reading the members zod would
 * otherwise add to it on first use (each method, bound; `~standard`); the SDK's freeze stops
 * at an object that is frozen already, so `_zod` and `def` stay zod's to fill in. What zod
 * caches there is a function of the schema alone, the same for every run. Which modules are
 * shared is the webpack module cache's answer before any run exists (the SDK's cache then
 * holds only shared modules). Workflow code: deterministic, no I/O.
 */
import { z } from 'zod';

/** webpack's table of the bundle's modules, by id. */
declare const __webpack_modules__: Record<string, unknown>;

/** The webpack module cache, as the SDK gives it to the bundle: before any run, the shared modules. */
const moduleCache = (globalThis as { __webpack_module_cache__?: Record<string, object | undefined> }).__webpack_module_cache__;

/** Walks what the SDK's freeze walks (own properties; not into functions, nor past a frozen object), freezing each schema on the way. */
function freezeSchemas(value: unknown, seen: WeakSet<object>): void {
  if (value === null || typeof value !== 'object' || seen.has(value) || Object.isFrozen(value)) return;
  seen.add(value);
  const keys = Reflect.ownKeys(value);
  if (value instanceof z.core.$ZodType) {
    // zod's members that become the schema's own on first read: a getter with a setter on one of its prototypes.
    for (let proto: unknown = Object.getPrototypeOf(value); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const key of Reflect.ownKeys(proto)) {
        const member = Object.getOwnPropertyDescriptor(proto, key)!;
        if (member.get && member.set && !Object.hasOwn(value, key)) Reflect.get(value, key);
      }
    }
    Object.freeze(value);
  }
  for (const key of keys) freezeSchemas(Reflect.get(value, key), seen);
}

if (moduleCache) {
  const seen = new WeakSet();
  for (const id of Object.keys(__webpack_modules__)) freezeSchemas(moduleCache[id], seen);
}

export {};
