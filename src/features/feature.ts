/**
 * A built-in feature as the loop knows it: its middleware, with the reference's name for it, and,
 * for a feature that needs more of its run than the middleware context gives (Agents' child runs,
 * Budget's tree ledger), its part of each run: the capabilities it provides the run's middleware,
 * and what it does with each call's usage and when the run ends. The loop builds every feature's
 * part once per run (run-setup.ts) and knows none by name. Pure: runs in the workflow.
 */
import type { z } from 'zod';
import type { HoldKind } from '../core/holds';
import type { AgentSpec, MiddlewareRef } from '../core/run';
import type { Usage } from '../core/usage';
import type { MiddlewareFactory } from '../middleware/define-middleware';
import type { MiddlewareDefinition } from '../middleware/types';
import type { CapabilityProvider } from '../middleware/run-capability';
import type { RunState } from '../workflows/run-state';

/** What the loop lends a feature's part of a run. */
export interface RunServices {
  run: RunState;
  /** The middleware the run's stages hand down to the runs it starts (`forChildRuns`). */
  inherited: () => MiddlewareRef[];
  /** Forgets the holds of a run this one started once it has settled. */
  forgetChild: (runId: string) => void;
  /** The agent's spec, once resolved (undefined before). */
  spec: () => AgentSpec | undefined;
}

/** A feature's part of one run. */
export interface FeatureRun {
  /** The capabilities it provides the run's middleware (each built on first use). */
  provides?: readonly CapabilityProvider[];
  /** Told of the usage of each model call and tool call of the run, right after it. */
  counted?: (usage: Usage) => void;
  /** The run is ending (however it ends, a cancellation included): what must still be said is said. */
  settle?: () => Promise<void>;
}

/** A built-in feature. */
export interface Feature {
  /** Its middleware. */
  definition: MiddlewareDefinition;
  /** The reference's name for the middleware (configs written for Genkit use it). */
  referenceName: string;
  /** Its part of a run (none: the middleware needs only its context). */
  run?: (services: RunServices) => FeatureRun;
}

/** Declares a built-in: its middleware, the reference's name for it, and its part of a run if it needs one. */
export function builtin<Schema extends z.ZodType, Carry extends z.ZodType, Holds extends readonly HoldKind[]>(
  factory: MiddlewareFactory<Schema, Carry, Holds>,
  referenceName: string,
  run?: Feature['run'],
): Feature {
  return { definition: factory.definition, referenceName, ...(run ? { run } : {}) };
}

/** Every feature's part of a run, as the loop uses them: capabilities gathered, usage and the end told to each. */
export function featureRuns(features: readonly Feature[], services: RunServices): Required<FeatureRun> {
  const parts = features.flatMap((feature) => (feature.run ? [feature.run(services)] : []));
  return {
    provides: parts.flatMap((part) => part.provides ?? []),
    counted: (usage) => parts.forEach((part) => part.counted?.(usage)),
    settle: async () => {
      for (const part of parts) await part.settle?.();
    },
  };
}
