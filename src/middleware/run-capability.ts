/**
 * The door a middleware reaches a capability of its run through: what the loop provides a run
 * beyond the generic context (the artifact store, and what a built-in needs of the loop: the
 * Agents' sub-agent runs, session runs and background tasks, Budget's tree ledger). Each
 * capability is a typed key (`defineCapability`), declared next to the feature it serves
 * (src/features/agents/capabilities.ts, src/features/budget/ledger-door.ts; the run's artifacts
 * here); a middleware asks `context.capability(key)` and gets it typed by the key.
 * The feature that declares a key (its `feature.ts`, listed in src/features/catalog.ts), the loop
 * for the run's artifacts, or the middleware harness with its fakes, says how each is built
 * (`provide`); a run builds one the first time a middleware asks for it and keeps it for
 * the run, so a run whose middleware never delegates never builds its task control. Pure: runs
 * in the workflow.
 */
import { KeelError } from '../core/errors';
import type { ArtifactStore } from '../core/artifacts';

/** A capability of a run, by key: `context.capability(key)` returns it typed as `T`. */
export interface RunCapability<T> {
  /** What the capability is, in a few words, unique among a run's capabilities: the subject of its errors (`background tasks`). */
  readonly name: string;
  /** Never set: carries `T` for the type checker. */
  readonly type?: T;
}

/** Declares a capability's key: `export const backgroundTasks = defineCapability<TaskControl>('background tasks')`. */
export function defineCapability<T>(name: string): RunCapability<T> {
  return { name };
}

/** Gets a capability of the run by its key: what `MiddlewareContext.capability` is. */
export type CapabilityCall = <T>(key: RunCapability<T>) => T;

/** How a run builds one capability. */
export interface CapabilityProvider {
  key: RunCapability<unknown>;
  build: () => unknown;
}

/** Says how a run builds the capability of `key` (called once per run, on first use). */
export function provide<T>(key: RunCapability<T>, build: () => T): CapabilityProvider {
  return { key, build };
}

/**
 * One run's capabilities: each built by its provider the first time it is asked for, then the
 * same for the rest of the run. A key the run has no provider for is a FAILED_PRECONDITION naming it.
 */
export function runCapabilities(providers: readonly CapabilityProvider[]): CapabilityCall {
  const built = new Map<string, unknown>();
  return <T>(key: RunCapability<T>): T => {
    if (!built.has(key.name)) {
      const provider = providers.find((candidate) => candidate.key.name === key.name);
      if (!provider) throw new KeelError('FAILED_PRECONDITION', `this run provides no capability "${key.name}"`);
      built.set(key.name, provider.build());
    }
    // The provider of this key built it: typed by the key.
    return built.get(key.name) as T;
  };
}

/** The run's artifacts (Artifacts, and the Agents middleware merging a sub-agent's): the one capability every run has of its own. */
export const runArtifacts = defineCapability<ArtifactStore>('artifacts');
