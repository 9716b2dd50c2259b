/**
 * What a finished sub-agent run gives the run that delegated to it: an answer for the model
 * (its final text, or why it has none) and its named artifacts, merged into this run under a
 * namespace of the sub-agent run's own. Shared by delegations that wait (agents.ts) and
 * background tasks collected later (background-tasks.ts). Runs in the workflow: no I/O.
 */
import { artifactText, type Artifact } from '../../core/artifacts';
import type { RunResult } from '../../core/run';
import { hasAnswer } from '../../core/tasks';
import type { MiddlewareContext } from '../../middleware/types';

/** Where a sub-agent's artifacts go, and how the model is told of them: `inline` with their content, `session` by name. */
export interface ArtifactMerge {
  context: MiddlewareContext;
  artifactStrategy: 'inline' | 'session';
}

/** A merged artifact as the model sees it. */
export interface MergedArtifact {
  name: string;
  content?: string;
}

/** What a finished sub-agent run answers the model: its text (or why it has none) and its merged artifacts. */
export interface SubAgentAnswer {
  response: string;
  /** The sub-agent's structured answer, when it has an output schema. */
  output?: unknown;
  artifacts?: MergedArtifact[];
}

/**
 * The namespace of a sub-agent run's artifacts: `<agent>_<8 hex digits>` from the run's id
 * (FNV-1a), unique across the runs and turns of a conversation, so a later delegation never
 * replaces an earlier one's artifacts.
 */
export function namespaceOf(agent: string, runId: string): string {
  let hash = 0x811c9dc5;
  for (let index = 0; index < runId.length; index++) {
    hash ^= runId.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return `${agent}_${hash.toString(16).padStart(8, '0')}`;
}

/** Merges a sub-agent's named artifacts into this run under `<namespace>/<name>` (unnamed ones are dropped); lists them for the model. */
export function mergeArtifacts(
  { context, artifactStrategy }: ArtifactMerge,
  agent: string,
  namespace: string,
  produced: readonly Artifact[],
): MergedArtifact[] {
  return produced
    .filter((artifact) => artifact.name !== '')
    .map((artifact) => {
      const name = `${namespace}/${artifact.name}`;
      context.artifacts.put({ ...artifact, name, metadata: { ...artifact.metadata, source: agent, invocationId: namespace } });
      return artifactStrategy === 'inline' ? { name, content: artifactText(artifact) } : { name };
    });
}

/**
 * The answer a finished sub-agent run gives the delegating model: its final text; for a run
 * that ended without an answer, why; for one that answered without text, where the result is
 * (its `artifacts` merged ones).
 */
export function foldResult(agent: string, { text, finishReason }: Pick<RunResult, 'text' | 'finishReason'>, artifacts: number): string {
  if (!hasAnswer(finishReason)) {
    return `Error calling agent "${agent}": its run ended as "${finishReason}" without completing the task; its last message was: ${text}.`;
  }
  if (text) return text;
  if (artifacts === 0) return 'The task completed, but the agent gave no final message and produced no artifacts.';
  return artifacts === 1
    ? 'The task completed without a final message; its result is in the one artifact it produced.'
    : `The task completed without a final message; its result is in the ${artifacts} artifacts it produced.`;
}

/** What a finished sub-agent run (`runId`) answers: its text (or why it has none), its structured `output` when it has one, and its artifacts, merged under `namespaceOf(agent, runId)`. */
export function subAgentAnswer(merge: ArtifactMerge, agent: string, runId: string, result: RunResult): SubAgentAnswer {
  const merged = mergeArtifacts(merge, agent, namespaceOf(agent, runId), result.artifacts);
  return {
    response: foldResult(agent, result, merged.length),
    ...(result.output !== undefined ? { output: result.output } : {}),
    ...(merged.length ? { artifacts: merged } : {}),
  };
}
