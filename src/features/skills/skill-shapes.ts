/**
 * Skills (reference: genkit-middleware/skills, the Agent Skills format): the shapes of a
 * scanned skill and of the skills activity's operations, and the folding that keeps disk
 * text from forging catalog lines or closing tags. Pure: safe in workflow code.
 */
import { z } from 'zod';
import { defineActivity } from '../../middleware/activity-door';

/** A skill found on disk. */
export const SkillSchema = z.object({
  /** The skill's directory name. */
  name: z.string(),
  description: z.string().optional(),
  /** The directory as the configured path names it (shown to the model). */
  shownDir: z.string(),
  /** The directory's real path on the worker. */
  dir: z.string(),
});
export type Skill = z.infer<typeof SkillSchema>;

/** An operation of the skills activity. */
export const SkillOperationSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('scan'), skillPaths: z.array(z.string()), preload: z.array(z.string()).default([]) }),
  z.object({ op: z.literal('load'), dir: z.string(), withResources: z.boolean().default(false) }),
  z.object({ op: z.literal('readResource'), dir: z.string(), filePath: z.string() }),
]);

/** What the skills activity answers. */
export const SkillResultSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('scan'), skills: z.array(SkillSchema), preloaded: z.record(z.string(), z.string()), warnings: z.array(z.string()) }),
  z.object({ kind: z.literal('load'), content: z.string(), resources: z.array(z.string()).optional(), truncated: z.boolean().optional() }),
  z.object({ kind: z.literal('resource'), content: z.string() }),
]);
export type SkillResult = z.infer<typeof SkillResultSchema>;

/** The `skills` activity: scan skill directories, load a skill, read a file it bundles (confined to it; heartbeated). */
export const skillsDoor = defineActivity({
  name: 'skills',
  input: SkillOperationSchema,
  output: SkillResultSchema,
  describe: (operation) => `skills operation ${operation.op}`,
});

/** Disk text made safe for one line of model-visible text: whitespace folded, tag openings escaped. */
export function fold(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/<(?=[A-Za-z/!?])/g, '&lt;');
}

/** Disk text made safe for an attribute value. */
export function attribute(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/[\r\n]+/g, ' ');
}
