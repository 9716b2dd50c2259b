/**
 * A built-in feature as the loop knows it: its middleware, with the reference's name for it, and,
 * for a feature that needs more of its run than the middleware context gives (Agents' child runs,
 * Budget's tree ledger), its part of each run: its own state (a slot of the run's state, with
 * its schema, which the loop carries across continue-as-new), what it lends its middleware
 * where the middleware is created (its third argument), what it adds to the run's status, and what it does with each call's usage
 * and when the run ends. A part is lent a few verbs of its run, never the run's state. The loop
 * builds every feature's part once per run (generate-run.ts) and knows none by name. Pure: runs
 * in the workflow.
 */
import type { z } from 'zod';
import type { HoldKind } from '../core/holds';
import type { HoldObserver } from '../core/hold-notices';
import type { AgentSpec, MiddlewareRef, RunStatus } from '../core/run';
import type { Usage } from '../core/usage';
import type { MiddlewareFactory } from '../middleware/define-middleware';
import type { MiddlewareDefinition } from '../middleware/types';

/** What may report holds to a run under a key: one run, or the runs of one session workflow. */
export type ReportSource = { runId: string } | { sessionWorkflowId: string };

/** What the loop lends a feature's part of a run: verbs of the run, and the feature's own state. */
export interface RunServices<State = undefined> {
  /** The run's id (its workflow id). */
  readonly runId: string;
  /** The feature's slot of the run's state: its schema's shape, carried into the next run of a chain. */
  readonly state: State;
  /** Adds usage that runs below this one spent to the run's usage (`from` names it when the sum cannot be counted). */
  addUsage: (usage: Usage, from?: string) => void;
  /** Records that `source` may report holds to the run under `key` (its holds show under that key). */
  expectReports: (key: string, source: ReportSource) => void;
  /** Records a signal the run refused, and why (its status keeps the last few). */
  refuseSignal: (signal: string, why: string) => void;
  /** The middleware the run's stages hand down to the runs it starts (`forChildRuns`). */
  inherited: () => MiddlewareRef[];
  /** Forgets the holds of a run this one started once it has settled. */
  forgetChild: (runId: string) => void;
  /** The agent's spec, once resolved (undefined before). */
  spec: () => AgentSpec | undefined;
}

/** A feature's part of one run. */
export interface FeatureRun {
  /** What it lends its middleware: the third argument of the middleware's `create` in this run. */
  part?: unknown;
  /** What it adds to the run's `status` query, read at each query. */
  status?: () => Partial<RunStatus>;
  /** Told, in order, of each thing that happens to one of the run's own holds (Notify sends notices of them). */
  observe?: HoldObserver;
  /** Told of the usage of each model call and tool call of the run, right after it. */
  counted?: (usage: Usage) => void;
  /** The run is ending (however it ends, a cancellation included): what must still be said is said. */
  settle?: () => Promise<void>;
}

/** A feature's slot of the run's state. */
export interface FeatureState<State> {
  /** The slot's shape; parsing `{}` gives a fresh run's slot. */
  schema: z.ZodType<State>;
  /** The slot a run carried before runs kept slots (its fields stood at the top of the carried state): kept so a chain continued by an older worker goes on. */
  legacy?: (carried: Record<string, unknown>) => unknown;
}

/** A built-in feature. */
export interface Feature {
  /** Its name: its middleware's, when it has one (its slot of the run's state goes by it). */
  name: string;
  /** Its middleware (none: the feature is only its part of each run, as Notify is). */
  definition?: MiddlewareDefinition;
  /** The reference's name for the middleware (configs written for Genkit use it). */
  referenceName?: string;
  /** Its slot of the run's state (none: it keeps nothing across a run's turns). */
  state?: FeatureState<unknown>;
  /** Its part of a run (none: the middleware needs only its context). */
  run?: (services: RunServices<unknown>) => FeatureRun;
}

/** What a built-in needs of its run beyond the middleware context: its state, and its part of each run. */
export interface FeaturePart<State> {
  state?: FeatureState<State>;
  run: (services: RunServices<State>) => FeatureRun;
}

/** Declares a built-in: its middleware, the reference's name for it, and its part of a run if it needs one. */
export function builtin<Schema extends z.ZodType, Carry extends z.ZodType, Holds extends readonly HoldKind[], State = undefined>(
  factory: MiddlewareFactory<Schema, Carry, Holds>,
  referenceName: string,
  part?: FeaturePart<State>,
): Feature {
  return { name: factory.definition.name, definition: factory.definition, referenceName, ...(part as Pick<Feature, 'state' | 'run'> | undefined) };
}

/** The verbs every feature's part of a run shares (the state is each one's own). */
export type RunVerbs = Omit<RunServices, 'state'>;

/** Every feature's part of a run, as the loop uses them. */
export interface FeatureRuns extends Required<Omit<FeatureRun, 'part'>> {
  /** What each feature lends its middleware, by the middleware's name. */
  parts: ReadonlyMap<string, unknown>;
}

/** Every feature's part of a run: each one's state in `slots`, what each lends its middleware by name, status, usage and the end told to each. */
export function featureRuns(features: readonly Feature[], verbs: RunVerbs, slots: Record<string, unknown>): FeatureRuns {
  const lent = new Map<string, unknown>();
  const parts = features.flatMap((feature) => {
    if (!feature.run) return [];
    const { name } = feature;
    if (feature.state) slots[name] = feature.state.schema.parse({});
    const part = feature.run({ ...verbs, state: slots[name] });
    if (part.part !== undefined) lent.set(name, part.part);
    return [part];
  });
  return {
    parts: lent,
    status: () => Object.assign({}, ...parts.map((part) => part.status?.() ?? {})) as Partial<RunStatus>,
    counted: (usage) => parts.forEach((part) => part.counted?.(usage)),
    observe: (event) => parts.forEach((part) => part.observe?.(event)),
    settle: async () => {
      for (const part of parts) await part.settle?.();
    },
  };
}

/** `build`'s value, built the first time it is asked for (what a feature lends is built on first use: a run that never delegates builds no task control). */
export function once<T>(build: () => T): () => T {
  let built: { value: T } | undefined;
  return () => (built ??= { value: build() }).value;
}

/**
 * Puts the slots a run carried back into a fresh run's slots (the same objects: each part holds
 * its own). A slot that does not parse is a run a client started with a made-up `continued`:
 * refused before that (continue-run.ts), so here it fails as keel's own fault.
 */
export function restoreSlots(features: readonly Feature[], slots: Record<string, unknown>, carried: Record<string, unknown>): void {
  const carriedSlots = (carried.features ?? {}) as Record<string, unknown>;
  for (const feature of features) {
    const { name } = feature;
    if (!feature.state || !(name in slots)) continue;
    const value = name in carriedSlots ? carriedSlots[name] : (feature.state.legacy?.(carried) ?? carried);
    Object.assign(slots[name] as object, feature.state.schema.parse(value));
  }
}
