/**
 * Artifacts (reference: genkit-middleware-exp/artifacts): gives the model `read_artifact`
 * and (unless read-only) `write_artifact` over the run's artifacts, and keeps a listing of
 * them in the system prompt, refreshed every iteration in place. Writing a name that exists
 * replaces it. The tools run in the workflow: an artifact is run state, recorded by
 * history, and ends up in the run's result. Runs in the workflow.
 */
import { z } from 'zod';
import { artifactText, type Artifact } from '../../core/artifacts';
import { defineMiddleware } from '../../middleware/define-middleware';
import { injectSystemText } from '../../middleware/system-text';
import type { ContributedTool } from '../../middleware/types';

/** Metadata key tagging the listing's part of the system prompt (the reference's). */
export const ARTIFACTS_LISTING_MARKER = 'artifacts-listing';

/** Artifacts' config. */
export const ArtifactsConfigSchema = z
  .object({
    /** Only `read_artifact`: the model cannot create or change artifacts. */
    readonly: z.boolean().default(false),
  })
  .strict();
export type ArtifactsConfig = z.input<typeof ArtifactsConfigSchema>;

/** The listing the system prompt carries: names, sizes and, for a sub-agent's, where it came from. */
export function artifactsListing(artifacts: readonly Artifact[]): string {
  if (artifacts.length === 0) return '<artifacts>\nThere are no artifacts in this session yet.\n</artifacts>';
  const lines = artifacts.map((artifact) => {
    const chars = [...artifactText(artifact)].length;
    const source = typeof artifact.metadata?.source === 'string' ? ` [from: ${artifact.metadata.source}]` : '';
    return `  - ${artifact.name || '(unnamed)'}${chars ? ` (${chars} chars)` : ''}${source}`;
  });
  return ['<artifacts>', 'These artifacts are available in this session; read one with the read_artifact tool.', ...lines, '</artifacts>'].join('\n');
}

const NameInput = { type: 'object', properties: { name: { type: 'string', description: 'The artifact to read.' } }, required: ['name'] };
const WriteInput = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'Name of the artifact (an existing one is replaced).' },
    content: { type: 'string', description: 'Its full text.' },
  },
  required: ['name', 'content'],
};

/** Artifacts: `use: [artifacts()]` or `artifacts({ readonly: true })`. */
export const artifacts = defineMiddleware({
  name: 'artifacts',
  description: 'Lets the model read and write the run’s artifacts, listed in the system prompt.',
  configSchema: ArtifactsConfigSchema,
  create(config, context) {
    const store = context.artifacts;
    const read: ContributedTool = {
      definition: {
        name: 'read_artifact',
        description: 'Reads an artifact of this session by name and returns its text.',
        inputSchema: NameInput,
        outputSchema: { type: 'object', properties: { name: { type: 'string' }, content: { type: 'string' }, found: { type: 'boolean' } } },
      },
      run: async (input) => {
        const name = String((input as { name?: unknown } | undefined)?.name ?? '');
        const artifact = store.get(name);
        return artifact ? { name, content: artifactText(artifact), found: true } : { name, content: `There is no artifact named "${name}".`, found: false };
      },
    };
    const write: ContributedTool = {
      definition: {
        name: 'write_artifact',
        description: 'Creates an artifact, or replaces the one with the same name.',
        inputSchema: WriteInput,
        outputSchema: { type: 'object', properties: { status: { type: 'string' } } },
      },
      run: async (input) => {
        const { name, content } = (input ?? {}) as { name?: unknown; content?: unknown };
        if (typeof name !== 'string' || name === '' || typeof content !== 'string')
          return { status: 'Error: write_artifact needs a non-empty "name" and a "content" string.' };
        store.put({ name, parts: [{ text: content }] });
        return { status: `Saved artifact "${name}".` };
      },
    };
    return {
      tools: config.readonly ? [read] : [read, write],
      wrapGenerate: (params, next) =>
        next({ ...params, messages: injectSystemText(params.messages, ARTIFACTS_LISTING_MARKER, artifactsListing(store.list())) }),
    };
  },
});
