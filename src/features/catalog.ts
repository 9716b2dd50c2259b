/**
 * The catalog: every built-in feature's workflow half (its middleware, each also under the
 * reference's name, and the part of each run it needs of the loop), and the middleware keel knows
 * by name: the built-ins plus any a `middlewareModules` file registers. A built-in adds its entry
 * here, and its activities to the Node half of the catalog (./activities.ts). Pure: runs in the
 * workflow, where a run's `use` refs are looked up here.
 */
import type { z } from 'zod';
import { KeelError } from '../core/errors';
import type { HoldKind } from '../core/holds';
import { agentsFeature } from './agents/feature';
import { artifacts } from './artifacts/artifacts';
import { budgetFeature } from './budget/feature';
import { contextCompression } from './context-compression/context-compression';
import { isMiddlewareFactory, type MiddlewareFactory } from '../middleware/define-middleware';
import { fallback } from './fallback/fallback';
import { holdKindOf, holdKinds } from '../middleware/hold-kinds';
import { skills } from './skills/skills';
import { filesystem } from './filesystem/filesystem';
import { retry } from './retry/retry';
import { softToolErrors } from './soft-tool-errors/soft-tool-errors';
import { toolApproval } from './tool-approval/tool-approval';
import type { MiddlewareDefinition } from '../middleware/types';
import { middlewareNames } from '../middleware/stages';
import { builtin, type Feature } from './feature';
import { recordedTools } from './eval/recorded-tools';
import { notifyFeature } from './notify/feature';

/** The built-ins, each middleware with the reference's name (stable ones under genkit-middleware/, experimental under genkit-middleware-exp/). */
export const FEATURES: readonly Feature[] = [
  builtin(retry, 'genkit-middleware/retry'),
  builtin(fallback, 'genkit-middleware/fallback'),
  builtin(softToolErrors, 'genkit-middleware/softToolErrors'),
  builtin(toolApproval, 'genkit-middleware/toolApproval'),
  budgetFeature,
  builtin(artifacts, 'genkit-middleware-exp/artifacts'),
  agentsFeature,
  builtin(filesystem, 'genkit-middleware/filesystem'),
  builtin(skills, 'genkit-middleware/skills'),
  builtin(contextCompression, 'genkit-middleware-exp/contextCompression'),
  // Last: a run's notices are handed on after every other feature settled, as they were before Notify had a folder.
  notifyFeature,
];

/**
 * Every middleware keel knows, by name; each also answers to the reference's name so
 * configs written for Genkit keep working.
 */
export const BUILTIN_MIDDLEWARE: Readonly<Record<string, MiddlewareDefinition>> = Object.fromEntries(
  FEATURES.flatMap(({ definition, referenceName }) =>
    definition
      ? [
          [definition.name, definition],
          [referenceName ?? definition.name, definition],
        ]
      : [],
  ),
);

/**
 * The catalog: filled while the bundle's entry loads (it registers the `middlewareModules`), which
 * is once per workflow thread, before any run; runs only read it. A run that registered a
 * middleware would register it for every run of its thread.
 */
const registered: Record<string, MiddlewareDefinition> = {
  ...BUILTIN_MIDDLEWARE,
  [recordedTools.definition.name]: recordedTools.definition,
};

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
export const registeredNames = (): string[] => middlewareNames(registered);

/** The kind of hold `kind` raised by the registered middleware `raisedBy` (a sub-agent's hold shown here), if this worker knows it. */
export function registeredHoldKind(raisedBy: string, kind: string, catalog: Readonly<Record<string, MiddlewareDefinition>> = registered): HoldKind | undefined {
  const definition = catalog[raisedBy];
  return definition ? holdKindOf(holdKinds(definition), kind) : undefined;
}

/** Spend ledgers of tenants and owners (Budget scope tenant, owner; docs/tenants.md): the ledger workflow the worker registers, and how `keel cost` reads one. */
export { keelSpendLedger } from './budget/spend-ledger';
export { spendLedgerId, spendQuery, type SpendReport, type WindowSpend } from './budget/spend-door';

/** Hold notices (docs/notify.md): the delivery workflow the worker registers for a notice a run could not deliver before it closed. */
export { keelHoldNotice } from './notify/hold-notices';

/** Eval suites (docs/eval.md): the suite workflow the worker registers, and the shapes `keel eval` (src/ops/eval-suite.ts) reads and reports. */
export { keelEvalSuite } from './eval/suite-workflow';
export {
  EVAL_MEMO_KEY,
  EVAL_SUITE_WORKFLOW,
  SuiteFileSchema,
  type EvalCase,
  type EvalSuiteInput,
  type SuiteFile,
  type SuiteReport,
  type ToolRecord,
} from './eval/suite';
