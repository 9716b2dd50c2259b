import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../node/package-root';
import { FEATURE_ACTIVITIES } from './activities';
import { BUILTIN_MIDDLEWARE, FEATURES } from './catalog';

const SRC = join(PACKAGE_ROOT, 'src');

/** Every module of src/ but tests. */
function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return modules(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The relative modules `file` imports, as paths under src/. */
function importsOf(file: string): string[] {
  const specifiers = [...readFileSync(file, 'utf8').matchAll(/^(?:import|export)[^;]*?from '(\.[^']+)'/gms)].map((match) => match[1]!);
  return specifiers.map((specifier) => relative(SRC, resolve(dirname(file), specifier)));
}

describe('the catalog', () => {
  it('is the one place outside a feature that names it: the loop, the worker and the activities reach features only through it', () => {
    const reaching = modules(SRC).flatMap((file) => {
      const from = relative(SRC, file);
      if (from.startsWith('features/')) return [];
      return importsOf(file)
        .filter((target) => /^features\/[^/]+\//.test(target))
        .map((target) => `${from} → ${target}`);
    });
    expect(reaching).toEqual([]);
  });

  it('lists every feature folder, in both halves', () => {
    const folders = readdirSync(join(SRC, 'features'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    const catalog = readFileSync(join(SRC, 'features', 'catalog.ts'), 'utf8');
    const activities = readFileSync(join(SRC, 'features', 'activities.ts'), 'utf8');
    for (const folder of folders) {
      expect(catalog, `features/${folder} is not in the catalog`).toContain(`from './${folder}/`);
      if (readdirSync(join(SRC, 'features', folder)).includes('activities')) {
        expect(activities, `features/${folder}/activities is not in features/activities.ts`).toContain(`from './${folder}/activities/`);
      }
    }
  });

  it('knows each built-in under its name and the reference name, and registers each activity once', () => {
    for (const { name, definition, referenceName } of FEATURES) {
      if (!definition) continue;
      expect(definition.name).toBe(name);
      expect(BUILTIN_MIDDLEWARE[name]).toBe(definition);
      expect(BUILTIN_MIDDLEWARE[referenceName!]).toBe(definition);
    }
    const names = FEATURE_ACTIVITIES.map((activity) => activity.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(expect.arrayContaining(['files', 'readTreeBudget', 'inspectTasks', 'awaitTasks', 'invokeSession', 'deliverHoldNotice']));
  });
});
