/**
 * keel as a dependency of someone else's project: `npm pack` (which builds dist/), the
 * tarball installed with `npm ci` into a fresh project, and from there the project's own
 * temporal.yaml, its .ts, .js and .mjs modules, a middleware module bundled with the
 * workflow, a package of its own node_modules, `keel worker` and `keel run`, an ES module
 * client script and a typecheck against the published declarations.
 *
 * No network: the project's lockfile is the tarball plus the production part of keel's own
 * lockfile, so `npm ci --offline` takes every package from the npm cache that installing
 * keel filled.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { inProject, projectLockfile } from './support/packed-project';
import { ROOT, spawnCommand, type KeelProcess } from './support/processes';

interface PackageJson {
  name: string;
  version: string;
  license?: string;
  bin?: Record<string, string>;
  engines?: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies?: Record<string, string>;
  exports?: Record<string, unknown>;
  files?: string[];
  private?: boolean;
}

const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;

/** The text of every source file of src/ (not the tests). */
function sourceTexts(): string[] {
  const texts: string[] = [];
  const visit = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) texts.push(readFileSync(path, 'utf8'));
    }
  };
  visit(join(ROOT, 'src'));
  return texts;
}

/** The package names src/ imports, from its import and require statements. */
function importedPackages(): Set<string> {
  const names = new Set<string>();
  for (const source of sourceTexts()) {
    for (const [, specifier] of source.matchAll(/(?:\bfrom\s+|\bimport\s*\(?\s*|\b(?:load|require|requireModule(?:<[^>]*>)?)\(\s*)'([^'.][^']*)'/g)) {
      if (specifier!.startsWith('node:') || builtinModules.includes(specifier!)) continue;
      const parts = specifier!.split('/');
      names.add(specifier!.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!);
    }
  }
  return names;
}

describe('package.json', () => {
  it('declares every package src/ imports, and nothing it does not', () => {
    const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
    const imported = importedPackages();
    expect([...imported].filter((name) => !declared.has(name)).sort()).toEqual([]);
    // A package loaded through a helper (the MCP SDK's modules) counts when src names it as a module specifier.
    const sources = sourceTexts().join('\n');
    expect([...declared].filter((name) => !imported.has(name) && !new RegExp(`['\`]${name.replace(/[/.]/g, '\\$&')}[/'\`]`).test(sources)).sort()).toEqual([]);
    // The optional S3 packages are installed for the tests, not for every user.
    for (const name of Object.keys(manifest.peerDependencies ?? {})) {
      expect(manifest.peerDependenciesMeta?.[name]?.optional, name).toBe(true);
      expect(manifest.devDependencies?.[name], name).toBeDefined();
    }
  });

  it('is publishable: no private flag, built entry points with types, the subpaths kept', () => {
    expect(manifest.private).toBeUndefined();
    expect(Object.keys(manifest.exports ?? {}).sort()).toEqual(['.', './middleware', './package.json', './protocol', './testing', './workflow']);
    for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
      if (subpath === './package.json') continue;
      expect(target, subpath).toMatchObject({
        types: expect.stringMatching(/^\.\/dist\/.*\.d\.ts$/),
        import: expect.stringMatching(/^\.\/dist\/.*\.mjs$/),
        default: expect.stringMatching(/^\.\/dist\/.*\.js$/),
      });
    }
    // Node 20.3 is what the Temporal SDK itself requires.
    expect(manifest.engines?.node).toBe('>=20.3');
  });
});

/** The user's project: config, agents in three module formats, a middleware module, a package of its own. */
function writeProject(dir: string, taskQueue: string): void {
  const files: Record<string, string> = {
    'temporal.yaml': stringify({
      temporal: { address: inject('temporalAddress') },
      taskQueue,
      worker: { stickyQueueScheduleToStartTimeout: '1 second' },
      modules: ['./agents.ts', './tools.js', './more.mjs'],
      middlewareModules: ['./house-rules.ts'],
      agents: [
        { name: 'greeter', model: 'scripted/my-agents', tools: ['greet', 'stamp', 'count'], use: [{ name: 'house-rules', config: { rule: 'be kind' } }] },
      ],
    }),
    'agents.ts': `import { z } from 'zod';
import { defineTool } from 'keel-agents';
import { scriptedModel, textReply, toolCallReply } from 'keel-agents/testing';
import { shout } from 'house-style';

export const greet = defineTool({
  name: 'greet',
  description: 'Greets someone',
  input: z.object({ who: z.string() }),
  run: async ({ who }) => shout(\`hello \${who}\`),
});

export const model = scriptedModel({
  name: 'scripted/my-agents',
  script: [
    { toolRequests: [{ name: 'greet', input: { who: 'ada' } }, { name: 'stamp', input: {} }, { name: 'count', input: {} }, { name: 'house_rule', input: {} }] },
    textReply('all done'),
  ],
});
// Unused, but typechecked: the reply helpers are part of the published types.
export const unused = toolCallReply({ name: 'greet', input: { who: 'x' } });
`,
    'tools.js': `const { z } = require('zod');
const { defineTool } = require('keel-agents');
exports.stamp = defineTool({ name: 'stamp', description: 'Stamps', input: z.object({}), run: async () => 'stamped' });
`,
    'more.mjs': `import { z } from 'zod';
import { defineTool } from 'keel-agents';
export const count = defineTool({ name: 'count', description: 'Counts', input: z.object({}), run: async () => 3 });
`,
    'house-rules.ts': `import { z } from 'zod';
import { defineMiddleware } from 'keel-agents/middleware';

export const houseRules = defineMiddleware({
  name: 'house-rules',
  description: 'Tells the model the house rule, and gives it a tool that reads it.',
  configSchema: z.object({ rule: z.string() }).strict(),
  create: (config) => ({
    tools: [{ definition: { name: 'house_rule', description: 'The house rule', inputSchema: { type: 'object', properties: {} } }, run: async () => config.rule }],
  }),
});
`,
    'client.mjs': `import { KeelClient, loadConfig } from 'keel-agents';
const client = await KeelClient.connect(loadConfig());
const handle = await client.start('greeter', 'greet ada');
const { messages } = await handle.result();
const { state: status } = await handle.status();
process.stdout.write(JSON.stringify({ status, messages }));
await client.close();
`,
    'readme-agents.ts': readmeExample(),
    'tsconfig.json': JSON.stringify({
      compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', noEmit: true, skipLibCheck: true, types: [] },
      files: ['agents.ts', 'house-rules.ts', 'readme-agents.ts'],
    }),
    'node_modules/house-style/package.json': JSON.stringify({ name: 'house-style', version: '1.0.0', main: 'index.js', types: 'index.d.ts' }),
    'node_modules/house-style/index.js': `exports.shout = (text) => text.toUpperCase() + '!';\n`,
    'node_modules/house-style/index.d.ts': 'export declare function shout(text: string): string;\n',
  };
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

/** The README's example module for your own project (the code block that starts with `// agents.ts`). */
function readmeExample(): string {
  const block = /```ts\n(\/\/ agents\.ts[^\n]*\n[\s\S]*?)```/.exec(readFileSync(join(ROOT, 'README.md'), 'utf8'));
  if (!block) throw new Error('README.md has no ```ts block starting with "// agents.ts"');
  return block[1]!;
}

describe('npm pack, installed into a fresh project', () => {
  const project = mkdtempSync(join(tmpdir(), 'keel-project-'));
  const packed = mkdtempSync(join(tmpdir(), 'keel-pack-'));
  const taskQueue = `package-${process.pid}`;
  const keel = join(project, 'node_modules', '.bin', 'keel');
  let worker: KeelProcess | undefined;
  /** The run of the worker test, exported and replayed by the next. */
  let greeted: string | undefined;

  beforeAll(async () => {
    const output = await inProject(ROOT, 'npm', ['pack', '--json', '--pack-destination', packed], 240_000);
    const [packedFile] = JSON.parse(output.slice(output.indexOf('['))) as Array<{ filename: string }>;
    const tarball = join(packed, packedFile!.filename);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'my-agents', version: '1.0.0', private: true, dependencies: { 'keel-agents': `file:${tarball}` } }),
    );
    writeFileSync(join(project, 'package-lock.json'), JSON.stringify(projectLockfile(tarball, 'my-agents')));
    await inProject(project, 'npm', ['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], 240_000);
    writeProject(project, taskQueue);
  }, 480_000);

  afterAll(async () => {
    worker?.kill('SIGKILL');
    await worker?.exited;
    for (const dir of [project, packed]) rmSync(dir, { recursive: true, force: true });
  });

  it('ships the build, not the sources', async () => {
    const installed = join(project, 'node_modules', 'keel-agents');
    expect(readdirSync(installed).sort()).toEqual(expect.arrayContaining(['bin', 'dist', 'package.json']));
    expect(readdirSync(installed)).not.toContain('src');
    expect(readdirSync(installed)).not.toContain('test');
    expect(await inProject(project, keel, ['--help'])).toMatch(/^usage: keel <command>/);
  });

  it("ships a manifest with no script that runs on the user's install (prepare builds a checkout, not a dependency)", () => {
    const { scripts = {} } = JSON.parse(readFileSync(join(project, 'node_modules', 'keel-agents', 'package.json'), 'utf8')) as {
      scripts?: Record<string, string>;
    };
    expect(Object.keys(scripts).filter((name) => ['preinstall', 'install', 'postinstall', 'prepare'].includes(name))).toEqual([]);
  });

  it('says that `keel demo` belongs to a keel checkout, without starting anything', async () => {
    const demo = await inProject(project, keel, ['demo']).then(
      () => 'exit 0',
      (error: Error) => error.message,
    );
    expect(demo).toContain('the demo runs the "trip-planner" agent of a keel checkout (examples/agents.ts); the config in');
    expect(demo).toContain('registers: greeter');
  });

  it('typechecks a project module against the published declarations', async () => {
    await inProject(project, process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json']);
  });

  it('loads the entry points as CommonJS and as ES modules, one copy of keel for both', async () => {
    const script = `
      import { createRequire } from 'node:module';
      import * as esm from 'keel-agents';
      import * as workflow from 'keel-agents/workflow';
      import * as middleware from 'keel-agents/middleware';
      import * as protocol from 'keel-agents/protocol';
      import * as testing from 'keel-agents/testing';
      const require = createRequire(import.meta.url);
      const cjs = require('keel-agents');
      console.log(JSON.stringify({
        same: esm.defineTool === cjs.defineTool && esm.KeelClient === cjs.KeelClient,
        workflow: typeof workflow.generateWorkflow,
        middleware: typeof middleware.defineMiddleware,
        protocol: typeof protocol.RunStatusSchema.parse,
        testing: typeof testing.startDevServer,
        sameRegistry: middleware.registerMiddleware === require('keel-agents/middleware').registerMiddleware,
      }));`;
    const out = await inProject(project, process.execPath, ['--input-type=module', '-e', script]);
    expect(JSON.parse(out)).toEqual({
      same: true,
      workflow: 'function',
      middleware: 'function',
      protocol: 'function',
      testing: 'function',
      sameRegistry: true,
    });
  });

  it("runs a worker from the project's temporal.yaml and its own modules, and a run through it", async () => {
    worker = spawnCommand(keel, ['worker'], { cwd: project });
    await worker.waitFor(/keel: worker \d+ on task queue/, 180_000);
    const run = await inProject(project, keel, ['run', 'greeter', 'greet', 'ada', '--json']);
    const result = JSON.parse(run) as { status: string; text: string; runId: string };
    expect(result).toMatchObject({ status: 'completed', text: 'all done' });
    greeted = result.runId;

    // The ES module client of the project, reading the tool results back.
    const { status, messages } = JSON.parse(await inProject(project, process.execPath, ['client.mjs'])) as {
      status: string;
      messages: Array<{ role: string; content: Array<{ toolResponse?: { name: string; output: unknown } }> }>;
    };
    const outputs = Object.fromEntries(
      messages.flatMap((message) => message.content.flatMap((part) => (part.toolResponse ? [[part.toolResponse.name, part.toolResponse.output]] : []))),
    );
    expect(status).toBe('completed');
    expect(outputs).toEqual({ greet: 'HELLO ADA!', stamp: 'stamped', count: 3, house_rule: 'be kind' });
  });

  it("exports the run's history and replays it against the project's workflow code, its middleware module bundled", async () => {
    expect(greeted, 'the worker test ran a run').toBeDefined();
    await inProject(project, keel, ['history', 'export', greeted!, '--out', 'histories/']);
    const script = `import { replayHistories } from 'keel-agents/testing';
      await replayHistories(['histories']);
      process.stdout.write('replayed');`;
    expect(await inProject(project, process.execPath, ['--input-type=module', '-e', script], 180_000)).toBe('replayed');
  }, 240_000);
});
