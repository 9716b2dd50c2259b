/**
 * Skills (reference: genkit-middleware/skills, the Agent Skills format): a library of
 * skill directories, each with a SKILL.md, scanned at the start of every run (an activity).
 * A catalog of the loadable skills is kept in the system prompt, refreshed in place;
 * `use_skill` loads a skill's instructions once per conversation; preloaded skills are put in
 * the system prompt; with resource access, `read_skill_file` reads the files a skill bundles,
 * confined to its directory. Disk text is folded and escaped, so a hostile description cannot
 * forge catalog lines or close tags. Runs in the workflow.
 */
import { log } from '@temporalio/workflow';
import { z } from 'zod';
import { attribute, fold, skillsDoor, type Skill } from './skill-shapes';
import type { Message, Part } from '../../core/messages';
import { toolAnswer } from '../../core/tool-answer';
import { defineMiddleware } from '../../middleware/define-middleware';
import { injectSystemText } from '../../middleware/system-text';
import type { ContributedTool } from '../../middleware/types';

/** Metadata key tagging the catalog part of the system prompt (the reference's). */
export const SKILLS_CATALOG_MARKER = 'skills-instructions';
/** Metadata key marking a loaded skill's instructions (a system part or a use_skill response). */
export const SKILL_ACTIVATION = 'skillActivation';
/** A catalog description is clipped to this many characters (the whole text comes with the activation). */
const MAX_DESCRIPTION = 1024;

/** Skills' config. */
export const SkillsConfigSchema = z
  .object({
    /** Directories whose direct subdirectories holding a SKILL.md are skills; a later path wins a name. */
    skillPaths: z.array(z.string()).default(['.agents/skills', 'skills']),
    /** Skills whose instructions are put in the system prompt from the start. */
    preload: z.array(z.string()).default([]),
    /** Adds read_skill_file, and lists each skill's bundled files on activation. */
    allowResourceAccess: z.boolean().default(false),
    /** Prefix of the tool names. */
    toolNamePrefix: z.string().default(''),
  })
  .strict();
export type SkillsConfig = z.input<typeof SkillsConfigSchema>;

/** The catalog of loadable skills. */
export function skillsCatalog(skills: readonly Skill[], useSkillTool: string): string {
  const lines = skills.map((skill) => {
    if (!skill.description) return ` - ${fold(skill.name)}`;
    const description = fold(skill.description);
    return ` - ${fold(skill.name)} - ${[...description].length > MAX_DESCRIPTION ? `${[...description].slice(0, MAX_DESCRIPTION).join('')}...` : description}`;
  });
  return [
    '<skills>',
    'You have a library of skills: specialized instructions for particular kinds of work.',
    'Use a skill whenever your work touches what it covers; load each one once.',
    `Call the ${useSkillTool} tool with a skill's name to load its instructions.`,
    'The available skills:',
    ...lines,
    '</skills>',
  ].join('\n');
}

/** A skill's instructions as an activation delivers them. */
function activation(skill: Skill, content: string, resources: { files?: string[]; truncated?: boolean } | undefined, readTool: string): string {
  const listing = resources?.files
    ? `\n<skill_resources>\nPaths are relative to the skill directory above; read them with the ${readTool} tool.\n${resources.files.map((file) => ` - ${fold(file)}`).join('\n')}${resources.truncated ? '\n (listing truncated at 100 files)' : ''}\n</skill_resources>\n`
    : '';
  return `<skill_content name="${attribute(skill.name)}" path="${attribute(skill.shownDir)}">\n${content}\n\nRelative paths in this skill resolve against ${fold(skill.shownDir)}\n${listing}</skill_content>`;
}

/** Names of skills loaded in a conversation: parts (system text or tool responses) marked as activations. */
function loadedIn(messages: readonly Message[]): Set<string> {
  const loaded = new Set<string>();
  for (const message of messages) {
    for (const part of message.content) {
      const name = part.metadata?.[SKILL_ACTIVATION];
      if (typeof name === 'string') loaded.add(name);
    }
  }
  return loaded;
}

/** Skills: `use: [skills({ skillPaths: ['skills'], allowResourceAccess: true })]` */
export const skills = defineMiddleware({
  name: 'skills',
  description: 'Offers a library of SKILL.md skills: a catalog in the system prompt, use_skill to load one, read_skill_file for bundled files.',
  configSchema: SkillsConfigSchema,
  async create(config, context) {
    const scan = await context.activity(skillsDoor, { op: 'scan', skillPaths: config.skillPaths, preload: config.preload });
    if (scan.kind !== 'scan') return {};
    for (const warning of scan.warnings) log.warn('skills', { warning });
    for (const name of config.preload) if (!scan.preloaded[name]) log.warn('skills: preload names no skill that could be read', { skill: name });
    if (scan.skills.length === 0) return {};
    const useSkill = `${config.toolNamePrefix}use_skill`;
    const readSkillFile = `${config.toolNamePrefix}read_skill_file`;
    const preloaded = scan.skills.filter((skill) => scan.preloaded[skill.name] !== undefined);
    const loadable = scan.skills.filter((skill) => scan.preloaded[skill.name] === undefined);
    const available = () => loadable.map((skill) => `"${fold(skill.name)}"`).join(', ') || '(none)';
    /** Skills loaded in this conversation, or being loaded by a call of this turn. */
    let claimed = new Set<string>();

    const find = (requested: string): Skill | undefined => {
      const exact = scan.skills.find((skill) => skill.name === requested);
      if (exact) return exact;
      const folded = scan.skills.filter((skill) => fold(skill.name) === fold(requested));
      return folded.length === 1 ? folded[0] : undefined;
    };
    /** A failure of these tools answers the model on one line, with the skills it can use. */
    const failed = (tool: string, error: unknown) =>
      `Tool "${tool}" failed: ${fold(error instanceof Error ? error.message : String(error))}. Available skills: ${available()}.`;

    const tools: ContributedTool[] = [];
    if (loadable.length) {
      tools.push({
        definition: {
          name: useSkill,
          description: 'Loads the instructions of a skill from the catalog, by name.',
          inputSchema: { type: 'object', properties: { skillName: { type: 'string' } }, required: ['skillName'] },
          outputSchema: { type: 'string' },
        },
        run: async (input) => {
          const requested = String((input as { skillName?: unknown } | undefined)?.skillName ?? '');
          const skill = find(requested);
          if (!skill || scan.preloaded[skill.name] !== undefined) return `Unknown skill "${fold(requested)}". Available skills: ${available()}.`;
          if (claimed.has(skill.name)) {
            return `Skill "${fold(skill.name)}" is already loaded in this conversation; its instructions are still in context. Refer to the earlier result instead of loading it again.`;
          }
          // Claimed before waiting, so a second call in the same turn gets the stub.
          claimed.add(skill.name);
          try {
            const loaded = await context.activity(skillsDoor, { op: 'load', dir: skill.dir, withResources: config.allowResourceAccess });
            if (loaded.kind !== 'load') throw new Error('unexpected answer');
            return toolAnswer(
              activation(
                skill,
                loaded.content,
                config.allowResourceAccess ? { files: loaded.resources ?? [], truncated: loaded.truncated ?? false } : undefined,
                readSkillFile,
              ),
              { [SKILL_ACTIVATION]: skill.name },
            );
          } catch (error) {
            claimed.delete(skill.name);
            return failed(useSkill, error);
          }
        },
      });
    }
    if (config.allowResourceAccess) {
      tools.push({
        definition: {
          name: readSkillFile,
          description: "Reads a file a skill bundles, by the skill's name and the file's path inside its directory.",
          inputSchema: { type: 'object', properties: { skillName: { type: 'string' }, filePath: { type: 'string' } }, required: ['skillName', 'filePath'] },
        },
        run: async (input) => {
          const { skillName, filePath } = (input ?? {}) as { skillName?: unknown; filePath?: unknown };
          const skill = find(String(skillName ?? ''));
          if (!skill) return `Unknown skill "${fold(String(skillName ?? ''))}". Available skills: ${available()}.`;
          try {
            const read = await context.activity(skillsDoor, { op: 'readResource', dir: skill.dir, filePath: String(filePath ?? '') });
            return read.kind === 'resource' ? read.content : failed(readSkillFile, 'unexpected answer');
          } catch (error) {
            return failed(readSkillFile, error);
          }
        },
      });
    }
    const catalog = loadable.length ? skillsCatalog(loadable, useSkill) : undefined;

    return {
      tools,
      wrapGenerate: (params, next) => {
        let messages = catalog ? injectSystemText(params.messages, SKILLS_CATALOG_MARKER, catalog, useSkill) : params.messages;
        // Preloaded skills go into the system prompt once, each marked as an activation.
        const present = loadedIn(messages);
        const missing: Part[] = preloaded
          .filter((skill) => !present.has(skill.name))
          .map((skill) => ({ text: activation(skill, scan.preloaded[skill.name]!, undefined, readSkillFile), metadata: { [SKILL_ACTIVATION]: skill.name } }));
        if (missing.length) {
          const system = messages.findIndex((message) => message.role === 'system');
          messages =
            system >= 0
              ? messages.map((message, index) => (index === system ? { ...message, content: [...message.content, ...missing] } : message))
              : [{ role: 'system', content: missing }, ...messages];
        }
        // What this conversation has loaded, as its messages show it (a lost marker makes a skill loadable again).
        claimed = loadedIn(messages);
        return next({ ...params, messages });
      },
    };
  },
});
