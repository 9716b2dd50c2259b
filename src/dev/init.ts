/**
 * `keel init [dir]`: writes a project that runs offline at once: a temporal.yaml, an agents
 * module (a scripted model, a tool, a tool held for approval) and a test of it on the testing
 * kit (`createTestEnv`), run by Node's own test runner through tsx (no other package to
 * install), and a tsconfig.json checked by `npm run typecheck`. It never overwrites a file: it
 * refuses, naming each one that exists; package.json gains what the project uses and does not
 * list (zod at the version keel depends on, typescript and @types/node for the typecheck, the
 * `test` and `typecheck` scripts), and keeps what it has. Node side.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { PACKAGE_ROOT } from '../node/package-root';
import { DirectoryError, makeDirectory } from '../server/make-directory';

/** Thrown when init would overwrite files, or cannot write where it was told to: names what and where. */
export class InitRefusal extends Error {}

/** What `initProject` did. */
export interface InitResult {
  dir: string;
  /** Files written, relative to `dir` (package.json aside). */
  written: string[];
  /** Whether package.json was written (none existed), and what an existing one gained (nothing: it had everything). */
  packageJson: { created: boolean } & Additions;
}

/** What package.json gained: script names, and dependencies as `name range`. */
export interface Additions {
  scripts: string[];
  dependencies: string[];
}

/** The test command of an initialized project. */
export const INIT_TEST_SCRIPT = 'tsx --test agents.test.ts';
/** The typecheck command of an initialized project (its tsconfig.json says noEmit). */
export const INIT_TYPECHECK_SCRIPT = 'tsc';

// The quotes of the templates' keel-agents imports are escaped: test/package.test.ts reads any quoted package after from, in src/, as an import of keel's own.
const AGENTS_MODULE = `// agents.ts: the agents, tools and models of this project (temporal.yaml lists this module).
import { defineAgent, defineTool, type ModelRequest } from \'keel-agents\';
import { toolApproval } from \'keel-agents/middleware\';
import { scriptedModel, textReply, toolCallReply } from \'keel-agents/testing\';
import { z } from 'zod';

/** Looks an order up (a stand-in for your own data). */
export const lookupOrder = defineTool({
  name: 'lookup_order',
  description: 'Looks an order up by its number',
  input: z.object({ order: z.string() }),
  run: async ({ order }) => ({ order, status: 'shipped', total: 42 }),
});

/** Refunds an order: the agent's toolApproval holds every call of it for a person. */
export const refundOrder = defineTool({
  name: 'refund_order',
  description: 'Refunds an order',
  input: z.object({ order: z.string() }),
  run: async ({ order }) => \`refunded order \${order}\`,
});

/** The text of the run's first (user) message. */
function promptOf(request: ModelRequest): string {
  const first = request.messages.find((message) => message.role === 'user');
  return first?.content.map((part) => ('text' in part ? part.text : '')).join(' ') ?? '';
}

/**
 * A scripted model: no key, no network. It looks the order up, refunds it when the prompt
 * says "refund", then answers. Swap it for a real one by registering e.g.
 * openAICompatibleModel({ name: 'openai/gpt-4o-mini' }) and naming that model below.
 */
export const model = scriptedModel({
  name: 'scripted/support',
  script: (request, callIndex) => {
    const order = /\\d+/.exec(promptOf(request))?.[0] ?? '1';
    if (callIndex === 0) return toolCallReply({ name: 'lookup_order', input: { order } });
    if (callIndex === 1 && /refund/i.test(promptOf(request))) return toolCallReply({ name: 'refund_order', input: { order } });
    return textReply(callIndex === 1 ? \`Order \${order} has shipped.\` : \`Order \${order} is refunded.\`);
  },
});

export const support = defineAgent({
  name: 'support',
  model: 'scripted/support',
  tools: [lookupOrder, refundOrder],
  // lookup_order runs at once; refund_order waits for npx keel approve (or deny).
  use: [toolApproval({ allowedTools: ['lookup_order'] })],
});
`;

const AGENTS_TEST = `// agents.test.ts: the agents of this project, end to end, on keel's testing kit (npm test).
// createTestEnv starts a Temporal dev server and a worker from temporal.yaml in this process.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestEnv, type TestEnv } from \'keel-agents/testing\';

describe('support agent', () => {
  let env: TestEnv;
  before(async () => {
    env = await createTestEnv();
  });
  after(async () => {
    await env?.close();
  });

  it('looks an order up and answers', async () => {
    const result = await env.run('support', 'where is order 7?');
    assert.equal(result.text, 'Order 7 has shipped.');
    await env.expectToolCalls(result.runId, [{ name: 'lookup_order', input: { order: '7' } }]);
  });

  it('holds a refund until it is approved', async () => {
    const handle = await env.start('support', 'refund order 7');
    const hold = await env.expectHold(handle, { toolName: 'refund_order' });
    await env.approve(handle, hold.id);
    const result = await handle.result();
    assert.equal(result.text, 'Order 7 is refunded.');
    const calls = await env.expectToolCalls(handle, ['lookup_order', 'refund_order']);
    assert.equal(calls[1]?.output, 'refunded order 7');
  });
});
`;

const TSCONFIG = `${JSON.stringify(
  { compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', noEmit: true, skipLibCheck: true } },
  null,
  2,
)}\n`;

/** The files `keel init` writes, by path relative to the project (package.json aside). */
export function initFiles(projectName: string): Record<string, string> {
  return {
    'temporal.yaml': `# keel's config: npx keel dev runs a dev server and a worker from it.
taskQueue: ${projectName}
modules: [./agents.ts]
`,
    'agents.ts': AGENTS_MODULE,
    'agents.test.ts': AGENTS_TEST,
    'tsconfig.json': TSCONFIG,
    '.gitignore': '.keel/\nnode_modules/\n',
  };
}

/** A name fit for a task queue and a package: the directory's, lower-cased, other characters as dashes. */
function projectNameOf(dir: string): string {
  return (
    basename(dir)
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'my-agents'
  );
}

/** The packages the project's files import besides keel, at the versions keel itself is built and tested with. */
function initDependencies(): { dependencies: Record<string, string>; devDependencies: Record<string, string> } {
  const keel = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  // keel's own zod version: npm then installs one copy, the one keel's schemas and the project's share.
  return {
    dependencies: { zod: keel.dependencies.zod! },
    devDependencies: { typescript: keel.devDependencies.typescript!, '@types/node': keel.devDependencies['@types/node']! },
  };
}

/** Writes `text` to `path`, or refuses in one line naming the file and the system's reason. */
function writeFile(path: string, text: string): void {
  try {
    writeFileSync(path, text);
  } catch (error) {
    throw new InitRefusal(`keel init: cannot write ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

interface Manifest {
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/** Adds what the project needs and `manifest` lacks; returns what it added. */
function addMissing(manifest: Manifest): Additions {
  const added: Additions = { scripts: [], dependencies: [] };
  const test = manifest.scripts?.test;
  // npm init's placeholder says there is no test: replaced; a test script of the project's own is kept.
  if (test === undefined || test.includes('no test specified')) {
    manifest.scripts = { ...manifest.scripts, test: INIT_TEST_SCRIPT };
    added.scripts.push('test');
  }
  if (manifest.scripts?.typecheck === undefined) {
    manifest.scripts = { ...manifest.scripts, typecheck: INIT_TYPECHECK_SCRIPT };
    added.scripts.push('typecheck');
  }
  const listed = (name: string) => [manifest.dependencies, manifest.devDependencies, manifest.peerDependencies].some((deps) => deps?.[name] !== undefined);
  const { dependencies, devDependencies } = initDependencies();
  for (const [field, wanted] of [
    ['dependencies', dependencies],
    ['devDependencies', devDependencies],
  ] as const) {
    for (const [name, range] of Object.entries(wanted)) {
      if (listed(name)) continue;
      manifest[field] = { ...manifest[field], [name]: range };
      added.dependencies.push(`${name} ${range}`);
    }
  }
  return added;
}

/** The directory to write into, made when missing: refuses in one line when it is a file or cannot be made. */
function projectDirectory(target: string): string {
  const dir = resolve(target);
  const existing = statSync(dir, { throwIfNoEntry: false });
  if (existing && !existing.isDirectory()) throw new InitRefusal(`keel init: ${dir} is a file, not a directory; give a directory (new or existing)`);
  return dir;
}

/** Writes a runnable project into `dir` (created if missing); refuses, writing nothing, when a file it writes exists. */
export function initProject(target = '.'): InitResult {
  const dir = projectDirectory(target);
  const name = projectNameOf(dir);
  const files = initFiles(name);
  const existing = Object.keys(files).filter((file) => existsSync(join(dir, file)));
  if (existing.length)
    throw new InitRefusal(
      `keel init: ${dir} has ${existing.join(', ')} already; nothing was written (move ${existing.length === 1 ? 'it' : 'them'} away, or init another directory)`,
    );
  try {
    makeDirectory(dir);
  } catch (error) {
    if (error instanceof DirectoryError) throw new InitRefusal(`keel init: ${error.message}`);
    throw error;
  }
  for (const [file, text] of Object.entries(files)) writeFile(join(dir, file), text);
  const packagePath = join(dir, 'package.json');
  if (!existsSync(packagePath)) {
    const manifest: Manifest & { name: string; version: string; private: boolean } = {
      name,
      version: '1.0.0',
      private: true,
      dependencies: { 'keel-agents': '*' },
    };
    addMissing(manifest);
    writeFile(packagePath, `${JSON.stringify(manifest, null, 2)}\n`);
    return { dir, written: Object.keys(files), packageJson: { created: true, scripts: [], dependencies: [] } };
  }
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(packagePath, 'utf8')) as Manifest;
  } catch (error) {
    const { dependencies, devDependencies } = initDependencies();
    throw new InitRefusal(
      `keel init: ${packagePath} is not JSON (${(error as Error).message}); the other files were written, add "test": "${INIT_TEST_SCRIPT}" to its scripts and ${Object.keys({ ...dependencies, ...devDependencies }).join(', ')} to its dependencies`,
    );
  }
  const added = addMissing(manifest);
  if (added.scripts.length || added.dependencies.length) writeFile(packagePath, `${JSON.stringify(manifest, null, 2)}\n`);
  return { dir, written: Object.keys(files), packageJson: { created: false, ...added } };
}
