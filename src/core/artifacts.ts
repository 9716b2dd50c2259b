/**
 * Artifacts: named outputs a run keeps beside its conversation (a report, a file a model
 * wrote), in the reference's shape. A run's artifacts are its own state; a store replaces
 * an artifact of the same name. Pure: safe in workflow code.
 */
import { z } from 'zod';
import { PartSchema } from './messages';

/** One artifact: a name, its content as parts, and metadata (`source` for a sub-agent's). */
export const ArtifactSchema = z.object({
  name: z.string(),
  parts: z.array(PartSchema),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type Artifact = z.infer<typeof ArtifactSchema>;

/** The text of an artifact: its non-empty text parts joined by newlines. */
export function artifactText(artifact: Artifact): string {
  return artifact.parts.flatMap((part) => ('text' in part && part.text !== '' ? [part.text] : [])).join('\n');
}

/** `artifacts` with `artifact` added, replacing any of the same name in place. */
export function putArtifact(artifacts: readonly Artifact[], artifact: Artifact): Artifact[] {
  const index = artifacts.findIndex((existing) => existing.name === artifact.name);
  if (index < 0) return [...artifacts, artifact];
  return artifacts.map((existing, position) => (position === index ? artifact : existing));
}

/** The run's artifacts, shared by its middleware; they end up in the run's result. */
export interface ArtifactStore {
  /** Every artifact, in the order they were first added. */
  list(): readonly Artifact[];
  get(name: string): Artifact | undefined;
  /** Adds an artifact, replacing any of the same name. */
  put(artifact: Artifact): void;
}

/**
 * The artifact store over `holder.artifacts` (a run's state, or the test harness's): `put`
 * replaces the holder's list, so what is read later (the run's status) sees it.
 */
export function artifactStore(holder: { artifacts: Artifact[] }): ArtifactStore {
  return {
    list: (): readonly Artifact[] => holder.artifacts,
    get: (name: string) => holder.artifacts.find((artifact) => artifact.name === name),
    put: (artifact: Artifact) => {
      holder.artifacts = putArtifact(holder.artifacts, artifact);
    },
  };
}
