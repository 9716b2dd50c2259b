/**
 * The sandbox lint (eslint.config.mjs) covers every keel module the workflow bundle pulls in:
 * the modules reached by value imports from the bundle's entries (type-only imports are erased
 * before bundling, so they pull nothing in).
 */
import { ESLint, Linter } from 'eslint';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../node/package-root';

/** The bundle's entries, as src/worker/bundle.ts builds it: the workflows, the interceptor and converter modules, the registry a middleware entry calls, and `keel-agents/middleware`. */
const BUNDLE_ENTRIES = [
  'src/workflows/index.ts',
  'src/workflows/log-attributes.ts',
  'src/workflows/payload-converter.ts',
  'src/workflows/shared-modules.ts',
  'src/workflows/shared-schemas.ts',
  'src/features/catalog.ts',
  'src/middleware/hold-kinds.ts',
  'src/middleware/stages.ts',
  'src/features/index.ts',
];

/** keel's own package names (tsconfig's paths), which resolve to its sources. */
const PACKAGE_PATHS = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'tsconfig.json'), 'utf8')) as { compilerOptions: { paths: Record<string, [string]> } })
  .compilerOptions.paths;

/** The file `specifier` names from `file`, or undefined for a package other than keel. */
function resolveImport(file: string, specifier: string): string | undefined {
  const own = PACKAGE_PATHS[specifier]?.[0];
  if (own) return resolve(PACKAGE_ROOT, own);
  if (!specifier.startsWith('.')) return undefined;
  const base = resolve(dirname(file), specifier);
  const found = [`${base}.ts`, join(base, 'index.ts'), base].find((candidate) => existsSync(candidate) && statSync(candidate).isFile());
  if (!found) throw new Error(`${relative(PACKAGE_ROOT, file)}: cannot resolve ${specifier}`);
  return found;
}

/** Every file the entries reach through value imports. */
function bundledModules(entries: readonly string[]): string[] {
  const seen = new Set<string>();
  const queue = entries.map((entry) => join(PACKAGE_ROOT, entry));
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, isolatedModules: true },
    });
    for (const [, specifier] of outputText.matchAll(/require\("([^"]+)"\)/g)) {
      const target = resolveImport(file, specifier!);
      if (target) queue.push(target);
    }
  }
  return [...seen].map((file) => relative(PACKAGE_ROOT, file)).sort();
}

describe('sandbox lint', () => {
  it('covers every module the workflow bundle pulls in', async () => {
    const modules = bundledModules(BUNDLE_ENTRIES);
    expect(modules).toContain('src/workflows/generate.ts');
    const eslint = new ESLint({ cwd: PACKAGE_ROOT });
    const uncovered: string[] = [];
    for (const module of modules) {
      const config = (await eslint.calculateConfigForFile(module)) as { rules?: Record<string, unknown> };
      const [, options] = (config.rules?.['no-restricted-imports'] ?? []) as [unknown, { paths?: Array<{ name: string }> }?];
      if (!options?.paths?.some((path) => path.name === 'fs')) uncovered.push(module);
      else if (JSON.stringify(config.rules?.['keel/no-module-state']) !== '[2]') uncovered.push(`${module} (keel/no-module-state)`);
    }
    expect(uncovered, 'bundled modules that eslint.config.mjs does not lint as workflow code').toEqual([]);
  });

  it('refuses module-level state in workflow code, which every run of a workflow thread would share', async () => {
    const planted = [
      'import { z } from "zod";',
      'let runs = 0;',
      'export function countRun(): number {',
      '  runs += 1;',
      '  return runs;',
      '}',
      'const seen = new Map<string, number>();',
      'export const remember = (id: string): void => void seen.set(id, 1);',
      'const totals: { spent: number } = { spent: 0 };',
      'export function spend(amount: number): void {',
      '  totals.spent += amount;',
      '}',
      'class Counter {',
      '  static count = 0;',
      '}',
      'export const tick = (): number => ++Counter.count;',
      // Not state: constants, a lookup set read only, a schema, and per-call objects.
      'const KNOWN = new Set(["a", "b"]);',
      'export const known = (name: string): boolean => KNOWN.has(name);',
      'export const Schema = z.object({ a: z.string() });',
      'export function fresh(): Map<string, number> {',
      '  const local = new Map<string, number>();',
      '  local.set("a", 1);',
      '  return local;',
      '}',
      '',
    ].join('\n');
    // The rule and the parser as eslint.config.mjs gives them for a workflow module; the rule needs no type information.
    const config = (await new ESLint({ cwd: PACKAGE_ROOT }).calculateConfigForFile('src/workflows/steering.ts')) as Linter.Config;
    const messages = new Linter().verify(
      planted,
      {
        files: ['**/*.ts'],
        languageOptions: { parser: config.languageOptions!.parser! },
        plugins: config.plugins!,
        rules: { 'keel/no-module-state': 'error' },
      },
      'src/workflows/planted.ts',
    );
    const found = messages.map((message) => `${message.line}: ${message.message.split(';')[0]}`);
    expect(found).toEqual([
      '2: module-level state: runs is a module-level let',
      '4: module-level state: runs is reassigned',
      '8: module-level state: seen is changed by .set()',
      '11: module-level state: totals has a member written to',
      '16: module-level state: Counter has a member written to',
    ]);
  });
});
