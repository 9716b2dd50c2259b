/**
 * The `skills` activity: scans skill directories for `<dir>/SKILL.md` (YAML frontmatter
 * with name and description), loads a skill's instructions and the listing of the files it
 * bundles, and reads one of those files, confined to the skill's directory. Symlinked skill
 * directories are followed; a symlinked SKILL.md is not. Node side.
 */
import { readdir, realpath, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { KeelError } from '../../../core/errors';
import type { z } from 'zod';
import { implementActivity } from '../../../activities/feature-activity';
import { skillsDoor, type Skill, type SkillOperationSchema, type SkillResult } from '../skill-shapes';
import { ConfinedRoot, readRegularFile } from '../../filesystem/activities/confined-fs';

/** A SKILL.md (or a bundled file) larger than this is skipped (scan) or refused (read). */
export const MAX_SKILL_FILE_BYTES = 1024 * 1024;
/** How many bundled files an activation lists. */
const MAX_RESOURCES = 100;
/** How deep the listing of bundled files goes. */
const MAX_RESOURCE_DEPTH = 4;

/** The `name` and `description` of a SKILL.md's frontmatter (a broken YAML block is read line by line). */
export function parseFrontmatter(content: string): { name?: string; description?: string; error?: string } {
  const text = content.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
  const lines = text.split('\n');
  if (lines[0]?.trimEnd() !== '---') return {};
  const end = lines.findIndex((line, index) => index > 0 && line.trimEnd() === '---');
  if (end < 0) return {};
  const block = lines.slice(1, end).join('\n');
  const pick = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined);
  try {
    const data = parse(block) as unknown;
    if (data === null || data === undefined) return {};
    if (typeof data !== 'object' || Array.isArray(data)) return { error: 'frontmatter is not a mapping' };
    const { name, description } = data as Record<string, unknown>;
    return { ...(pick(name) ? { name: pick(name) } : {}), ...(pick(description) ? { description: pick(description) } : {}) };
  } catch (error) {
    // Line by line: `key: value`, a bare block-scalar header counts as absent.
    const found: { name?: string; description?: string } = {};
    for (const line of block.split('\n')) {
      const match = /^(name|description):\s*(.*)$/.exec(line);
      if (!match) continue;
      const value = match[2]!.trim().replace(/^(["'])(.*)\1$/, '$2');
      if (value && !/^[|>][-+]?$/.test(value)) found[match[1] as 'name' | 'description'] = value;
    }
    return { ...found, error: (error as Error).message.split('\n')[0] };
  }
}

async function scan(skillPaths: readonly string[], preload: readonly string[]): Promise<SkillResult> {
  const byName = new Map<string, Skill & { content: string }>();
  const warnings: string[] = [];
  for (const configured of skillPaths) {
    const base = resolve(configured);
    const entries = await readdir(base, { withFileTypes: true }).catch(() => undefined);
    if (!entries) continue;
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name.startsWith('.')) continue;
      const dirPath = join(base, entry.name);
      // A symlinked skill directory is followed (installers create them).
      const dirInfo = await stat(dirPath).catch(() => undefined);
      if (!dirInfo?.isDirectory()) continue;
      // SKILL.md itself must be a regular file: a symlink (or a pipe) is skipped, never waited on.
      const read = await readRegularFile(join(dirPath, 'SKILL.md'), MAX_SKILL_FILE_BYTES);
      if (!read) continue;
      if ('tooLarge' in read) {
        warnings.push(`skill "${entry.name}" skipped: SKILL.md is over ${MAX_SKILL_FILE_BYTES} bytes`);
        continue;
      }
      const { content } = read;
      const { description } = parseFrontmatter(content);
      if (byName.has(entry.name)) warnings.push(`skill "${entry.name}" in ${configured} shadows the one found earlier`);
      byName.set(entry.name, {
        name: entry.name,
        ...(description ? { description } : {}),
        shownDir: `${configured.replace(/\/+$/, '')}/${entry.name}`,
        dir: await realpath(dirPath),
        content,
      });
    }
  }
  const skills = [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  const preloaded = Object.fromEntries(skills.filter((skill) => preload.includes(skill.name)).map((skill) => [skill.name, skill.content]));
  return { kind: 'scan', skills: skills.map(({ content: _content, ...skill }) => skill), preloaded, warnings };
}

/** The regular files a skill bundles, relative to its directory: sorted, no dot entries, no SKILL.md, not too deep. */
async function resources(dir: string): Promise<{ files: string[]; truncated: boolean }> {
  const files: string[] = [];
  const walk = async (relDir: string, depth: number): Promise<void> => {
    if (depth >= MAX_RESOURCE_DEPTH) return;
    const entries = await readdir(join(dir, relDir), { withFileTypes: true }).catch(() => []);
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name.startsWith('.')) continue;
      const rel = relDir ? `${relDir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(rel, depth + 1);
      else if (entry.isFile() && rel !== 'SKILL.md') files.push(rel);
    }
  };
  await walk('', 0);
  return { files: files.slice(0, MAX_RESOURCES), truncated: files.length > MAX_RESOURCES };
}

/** Runs one skills operation (the `skills` activity; its door parsed the operation). */
export async function runSkillOperation(operation: z.output<typeof SkillOperationSchema>): Promise<SkillResult> {
  switch (operation.op) {
    case 'scan':
      return scan(operation.skillPaths, operation.preload);
    case 'load': {
      const read = await readRegularFile(join(operation.dir, 'SKILL.md'), MAX_SKILL_FILE_BYTES);
      if (!read) throw new KeelError('NOT_FOUND', 'SKILL.md is gone or is not a regular file');
      if ('tooLarge' in read) throw new KeelError('OUT_OF_RANGE', `SKILL.md is over ${MAX_SKILL_FILE_BYTES} bytes`);
      const { content } = read;
      if (!operation.withResources) return { kind: 'load', content };
      const listing = await resources(operation.dir);
      return { kind: 'load', content, resources: listing.files, ...(listing.truncated ? { truncated: true } : {}) };
    }
    case 'readResource': {
      const root = await ConfinedRoot.open(operation.dir);
      try {
        const { handle, rel, info } = await root.openForRead(operation.filePath);
        try {
          if (info.size > MAX_SKILL_FILE_BYTES) throw new KeelError('OUT_OF_RANGE', `"${rel}" is over ${MAX_SKILL_FILE_BYTES} bytes`);
          return { kind: 'resource', content: (await handle.readFile()).toString('utf8') };
        } finally {
          await handle.close();
        }
      } finally {
        await root.close();
      }
    }
  }
}

/** The Node half of Skills: the `skills` activity, heartbeated. */
export const skillsActivities = [implementActivity(skillsDoor, runSkillOperation, { heartbeat: true })];
