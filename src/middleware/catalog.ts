/**
 * The middleware keel knows, by name: the built-ins (each also under the reference's name), plus
 * any a `middlewareModules` file registers. Pure: runs in the workflow, where a run's `use`
 * refs are looked up here.
 */
import type { z } from 'zod';
import { KeelError } from '../core/errors';
import type { HoldKind } from '../core/holds';
import { agents } from '../features/agents/agents';
import { artifacts } from '../features/artifacts/artifacts';
import { budget } from '../features/budget/budget';
import { contextCompression } from '../features/context-compression/context-compression';
import { isMiddlewareFactory, type MiddlewareFactory } from './define-middleware';
import { fallback } from './fallback';
import { holdKindOf, holdKinds } from './hold-kinds';
import { skills } from '../features/skills/skills';
import { filesystem } from '../features/filesystem/filesystem';
import { retry } from './retry';
import { softToolErrors } from './soft-tool-errors';
import { toolApproval } from './tool-approval';
import type { MiddlewareDefinition } from './types';

/** Built-in middleware with the reference's name for each (stable ones under genkit-middleware/, experimental under genkit-middleware-exp/). */
const builtins: Array<[MiddlewareFactory, string]> = [
  [retry as MiddlewareFactory, 'genkit-middleware/retry'],
  [fallback as MiddlewareFactory, 'genkit-middleware/fallback'],
  [softToolErrors as MiddlewareFactory, 'genkit-middleware/softToolErrors'],
  [toolApproval as MiddlewareFactory, 'genkit-middleware/toolApproval'],
  [budget as MiddlewareFactory, 'genkit-middleware-exp/budget'],
  [artifacts as MiddlewareFactory, 'genkit-middleware-exp/artifacts'],
  [agents as MiddlewareFactory, 'genkit-middleware-exp/agents'],
  [filesystem as MiddlewareFactory, 'genkit-middleware/filesystem'],
  [skills as MiddlewareFactory, 'genkit-middleware/skills'],
  [contextCompression as MiddlewareFactory, 'genkit-middleware-exp/contextCompression'],
];

/**
 * Every middleware keel knows, by name; each also answers to the reference's name so
 * configs written for Genkit keep working.
 */
export const BUILTIN_MIDDLEWARE: Readonly<Record<string, MiddlewareDefinition>> = Object.fromEntries(
  builtins.flatMap(([factory, referenceName]) => [
    [factory.definition.name, factory.definition],
    [referenceName, factory.definition],
  ]),
);

/**
 * The catalog: filled while the bundle's entry loads (it registers the `middlewareModules`), which
 * is once per workflow thread, before any run; runs only read it. A run that registered a
 * middleware would register it for every run of its thread.
 */
const registered: Record<string, MiddlewareDefinition> = { ...BUILTIN_MIDDLEWARE };

/**
 * Registers a middleware (a `defineMiddleware` factory, or its definition) under its name.
 * Modules listed under `middlewareModules` have every exported factory registered for them;
 * call this for any other. Such modules are bundled with the workflow, so they must be
 * deterministic (no I/O, clock or randomness except through @temporalio/workflow).
 */
export function registerMiddleware<Schema extends z.ZodType>(middleware: MiddlewareFactory<Schema> | MiddlewareDefinition<Schema>): void {
  const definition = (isMiddlewareFactory(middleware) ? middleware.definition : middleware) as unknown as MiddlewareDefinition;
  const existing = registered[definition.name];
  if (existing && existing !== definition) {
    throw new KeelError('ALREADY_EXISTS', `middleware "${definition.name}" is already registered`);
  }
  // eslint-disable-next-line keel/no-module-state -- registration happens when a module loads, never in a run (see `registered`)
  registered[definition.name] = definition;
}

/** Registers every middleware factory among a module's exports. */
export function registerExportedMiddleware(moduleExports: Record<string, unknown>): void {
  for (const value of Object.values(moduleExports)) if (isMiddlewareFactory(value)) registerMiddleware(value);
}

/** Every registered middleware, by name (reference aliases included). */
export function registeredMiddleware(): Readonly<Record<string, MiddlewareDefinition>> {
  return registered;
}

/** Registered names without the reference aliases, sorted (for messages). */
export function middlewareNames(catalog: Readonly<Record<string, MiddlewareDefinition>> = registered): string[] {
  return Object.keys(catalog)
    .filter((name) => !name.includes('/') || catalog[name]!.name === name)
    .sort();
}

/** The kind of hold `kind` raised by the registered middleware `raisedBy` (a sub-agent's hold shown here), if this worker knows it. */
export function registeredHoldKind(raisedBy: string, kind: string, catalog: Readonly<Record<string, MiddlewareDefinition>> = registered): HoldKind | undefined {
  const definition = catalog[raisedBy];
  return definition ? holdKindOf(holdKinds(definition), kind) : undefined;
}
