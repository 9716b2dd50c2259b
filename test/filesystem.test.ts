/**
 * Filesystem (docs/middleware/filesystem.md) as real runs: each file operation an activity confined to the
 * root; read contents reach the model as a user message at the next turn; writes and edits
 * need an unchanged read; failures answer the model. And a path-escape suite: nothing
 * outside the root is ever read or written, and the run goes on.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runErrorOf } from '../src/client/keel-client';
import type { Message, ModelRequest } from '../src/core/messages';
import { defineAgent } from '../src/define';
import { filesystem } from '../src/features/filesystem/filesystem';
import { scriptedModel, textReply, toolCallReply, type ScriptedReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { sharedTestWorker } from './support/harness';
import { GENERATE_WORKFLOW } from '../src/core/protocol';

const registry = new Registry();
const worker = sharedTestWorker(registry);

/** A fresh root with a few files, and a secret beside it (outside). */
function workspace() {
  const base = mkdtempSync(join(tmpdir(), 'keel-fs-'));
  const root = join(base, 'root');
  mkdirSync(join(root, 'docs', 'deep'), { recursive: true });
  writeFileSync(join(root, 'notes.txt'), 'a\nb\nc\nd\ne\n');
  writeFileSync(join(root, 'docs', 'guide.md'), '# Guide\n');
  writeFileSync(join(root, 'docs', 'deep', 'x.txt'), 'xx');
  writeFileSync(join(root, 'pic.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  writeFileSync(join(base, 'secret.txt'), 'TOP SECRET');
  mkdirSync(join(base, 'outside'));
  writeFileSync(join(base, 'outside', 'x.txt'), 'OUTSIDE');
  return { base, root };
}

let count = 0;
function agent(script: ScriptedReply[] | ((request: ModelRequest) => ScriptedReply), config: Parameters<typeof filesystem>[0]) {
  const name = `fs-${++count}`;
  const model = scriptedModel({ name: `scripted/${name}`, script });
  registry.add(model, defineAgent({ name, model: model.name, use: [filesystem(config)], maxTurns: 20 }));
  return { name, model };
}

/** Tool outputs, in order. */
const outputs = (messages: Message[]) =>
  messages
    .filter((message) => message.role === 'tool')
    .flatMap((message) => message.content.map((part) => (part as { toolResponse: { output: unknown } }).toolResponse.output));

describe.concurrent('filesystem tools', () => {
  it('lists files, flat and recursive, with sizes', async () => {
    const { root } = workspace();
    const { name } = agent(
      [
        toolCallReply([
          { name: 'list_files', input: {} },
          { name: 'list_files', input: { dirPath: 'docs', recursive: true } },
        ]),
        textReply('done'),
      ],
      { rootDirectory: root },
    );
    const [flat, recursive] = outputs((await worker().client.run(name, 'go')).messages);
    expect(flat).toEqual([
      { path: 'docs', isDirectory: true },
      { path: 'notes.txt', isDirectory: false, sizeBytes: 10 },
      { path: 'pic.png', isDirectory: false, sizeBytes: 4 },
    ]);
    expect(recursive).toEqual([
      { path: 'deep', isDirectory: true },
      { path: 'deep/x.txt', isDirectory: false, sizeBytes: 2 },
      { path: 'guide.md', isDirectory: false, sizeBytes: 8 },
    ]);
  });

  it('delivers what read_file read as a user message at the next turn; a slice says which lines; an unchanged re-read answers the stub', async () => {
    // turn 1: read notes.txt whole, then lines 2-3, and the image; turn 2: read lines 2-3 again (unchanged); turn 3: done
    const { root } = workspace();
    const { name, model } = agent(
      [
        toolCallReply([
          { name: 'read_file', input: { filePath: 'notes.txt' } },
          { name: 'read_file', input: { filePath: '/docs/../notes.txt', offset: 2, limit: 2 } },
          { name: 'read_file', input: { filePath: 'pic.png' } },
        ]),
        toolCallReply({ name: 'read_file', input: { filePath: 'notes.txt', offset: 2, limit: 2 } }),
        textReply('done'),
      ],
      { rootDirectory: root },
    );
    const result = await worker().client.run(name, 'go');
    expect(outputs(result.messages)).toEqual([
      'File notes.txt read successfully (5 lines). See contents below.',
      'File notes.txt read successfully (lines 2-3 of 5 total). See contents below.',
      'File pic.png read successfully, see contents below.',
      'File unchanged since last read. The content from the earlier read_file result in this conversation is still current; refer to that instead of re-reading.',
    ]);
    // One user message with every read of the turn, in the order the reads finished (reads of one path one after another).
    const injected = model.requests[1]!.request.messages.at(-1)!;
    expect(injected).toMatchObject({ role: 'user', metadata: { filesystemMiddlewareTool: 'read_file' } });
    expect(injected.content).toHaveLength(4);
    expect(injected.content).toEqual(
      expect.arrayContaining([
        { text: '<read_file path="notes.txt" totalLines="5">\na\nb\nc\nd\ne\n</read_file>' },
        { text: '<read_file path="notes.txt" lines="2-3" totalLines="5">\nb\nc\n</read_file>' },
        { text: '\n\nread_file result image/png pic.png' },
        { media: { url: `data:image/png;base64,${Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString('base64')}`, contentType: 'image/png' } },
      ]),
    );
    const texts = injected.content.map((part) => ('text' in part ? part.text : 'media'));
    expect(texts.indexOf('\n\nread_file result image/png pic.png') + 1).toBe(texts.indexOf('media'));
    // the unchanged re-read injected nothing more
    expect(model.requests[2]!.request.messages.at(-1)!.role).toBe('tool');
  });

  it('has no write tools without write access; with it, write and edit need an unchanged read', async () => {
    const { root } = workspace();
    const readOnly = agent([textReply('ok')], { rootDirectory: root });
    await worker().client.run(readOnly.name, 'go');
    expect(readOnly.model.requests[0]!.request.tools.map((tool) => tool.name)).toEqual(['list_files', 'read_file']);

    // turn 1: write new.txt (new: fine) and overwrite notes.txt (never read: refused); turn 2: edit notes.txt (refused, not read);
    // turn 3: read it; turn 4: edit it (two edits, in order) and edit with a missing oldString (all or nothing);
    // (between turns 4 and 5 the file changes on disk) turn 5: edit again (refused: modified); turn 6: done
    const writer = agent(
      [
        toolCallReply([
          { name: 'write_file', input: { filePath: 'sub/new.txt', content: 'fresh' } },
          { name: 'write_file', input: { filePath: 'notes.txt', content: 'clobber' } },
        ]),
        toolCallReply({ name: 'edit_file', input: { filePath: 'notes.txt', edits: [{ oldString: 'a', newString: 'A' }] } }),
        toolCallReply({ name: 'read_file', input: { filePath: 'notes.txt' } }),
        toolCallReply([
          {
            name: 'edit_file',
            input: {
              filePath: 'notes.txt',
              edits: [
                { oldString: 'a\n', newString: 'A\n' },
                { oldString: 'A\nb', newString: 'AB' },
              ],
            },
          },
          { name: 'edit_file', input: { filePath: 'docs/guide.md', edits: [{ oldString: 'nothing', newString: 'x' }] } },
        ]),
        () => {
          writeFileSync(join(root, 'notes.txt'), 'changed behind the run\n');
          return toolCallReply({ name: 'edit_file', input: { filePath: 'notes.txt', edits: [{ oldString: 'changed', newString: 'x' }] } });
        },
        textReply('done'),
      ] as unknown as ScriptedReply[],
      { rootDirectory: root, allowWriteAccess: true },
    );
    const result = await worker().client.run(writer.name, 'go');
    expect(outputs(result.messages)).toEqual([
      'File sub/new.txt written successfully.',
      { error: 'file "notes.txt" exists but has not been read yet; read_file it first' },
      { error: 'file "notes.txt" has not been read yet; read_file it first' },
      'File notes.txt read successfully (5 lines). See contents below.',
      'Successfully applied 2 edit(s) to notes.txt.',
      { error: 'file "docs/guide.md" has not been read yet; read_file it first' },
      { error: 'file "notes.txt" has been modified since last read; re-read it' },
    ]);
    expect(readFileSync(join(root, 'sub', 'new.txt'), 'utf8')).toBe('fresh');
    expect(readFileSync(join(root, 'notes.txt'), 'utf8')).toBe('changed behind the run\n');
  });

  it('applies no edit when one of them fails, and says which', async () => {
    const { root } = workspace();
    const { name } = agent(
      [
        toolCallReply({ name: 'read_file', input: { filePath: 'notes.txt' } }),
        toolCallReply({
          name: 'edit_file',
          input: {
            filePath: 'notes.txt',
            edits: [
              { oldString: 'a', newString: 'A' },
              { oldString: 'zzz', newString: 'y' },
            ],
          },
        }),
        toolCallReply({ name: 'edit_file', input: { filePath: 'notes.txt', edits: [{ oldString: '\n', newString: ';' }] } }),
        textReply('done'),
      ],
      { rootDirectory: root, allowWriteAccess: true },
    );
    const result = await worker().client.run(name, 'go');
    expect(outputs(result.messages).slice(1)).toEqual([
      { error: 'edit 2: oldString not found in the file; it must match the file byte-for-byte, including whitespace and indentation' },
      { error: 'edit 1: oldString matches 5 locations; add surrounding context to make it unique, or set replaceAll=true' },
    ]);
    expect(readFileSync(join(root, 'notes.txt'), 'utf8')).toBe('a\nb\nc\nd\ne\n');
  });

  it('renames its tools with a prefix; a blank root is rejected where the agent is defined', async () => {
    const { root } = workspace();
    const { name, model } = agent([textReply('ok')], { rootDirectory: root, allowWriteAccess: true, toolNamePrefix: 'fs_' });
    await worker().client.run(name, 'go');
    expect(model.requests[0]!.request.tools.map((tool) => tool.name)).toEqual(['fs_list_files', 'fs_read_file', 'fs_write_file', 'fs_edit_file']);
    expect(() => filesystem({ rootDirectory: '  ' })).toThrow('invalid config for middleware "filesystem": config.rootDirectory: rootDirectory is required');
  });

  it('answers a missing root directory to the model', async () => {
    const { name } = agent([toolCallReply({ name: 'list_files', input: {} }), textReply('done')], { rootDirectory: join(tmpdir(), 'keel-no-such-root') });
    const [answer] = outputs((await worker().client.run(name, 'go')).messages);
    expect(answer).toEqual({ error: expect.stringContaining('cannot be opened: ENOENT') });
  });
});

describe.concurrent('filesystem confinement', () => {
  it('refuses every path that leaves the root, reads and writes nothing outside, and the run goes on', async () => {
    const { base, root } = workspace();
    symlinkSync(join(base, 'secret.txt'), join(root, 'link-to-secret'));
    symlinkSync(join(base, 'outside'), join(root, 'linked-dir'));
    symlinkSync(join(root, 'notes.txt'), join(root, 'inner-link'));
    const escapes = [
      { name: 'read_file', input: { filePath: '../secret.txt' } },
      { name: 'read_file', input: { filePath: '../../../../etc/passwd' } },
      { name: 'read_file', input: { filePath: 'docs/../../secret.txt' } },
      { name: 'read_file', input: { filePath: join(base, 'secret.txt') } },
      { name: 'read_file', input: { filePath: 'link-to-secret' } },
      { name: 'read_file', input: { filePath: 'linked-dir/x.txt' } },
      { name: 'read_file', input: { filePath: 'notes.txt\u0000.png' } },
      { name: 'read_file', input: { filePath: `${'a/'.repeat(3000)}x` } },
      { name: 'list_files', input: { dirPath: 'linked-dir' } },
      { name: 'list_files', input: { dirPath: '..' } },
      { name: 'write_file', input: { filePath: '../planted.txt', content: 'x' } },
      { name: 'write_file', input: { filePath: 'linked-dir/planted.txt', content: 'x' } },
      { name: 'write_file', input: { filePath: 'link-to-secret', content: 'x' } },
      { name: 'edit_file', input: { filePath: '../secret.txt', edits: [{ oldString: 'TOP', newString: 'NOT' }] } },
    ];
    const { name } = agent([toolCallReply(escapes), toolCallReply({ name: 'read_file', input: { filePath: 'inner-link' } }), textReply('still here')], {
      rootDirectory: root,
      allowWriteAccess: true,
    });
    const result = await worker().client.run(name, 'go');
    expect(result.text).toBe('still here');
    const answers = outputs(result.messages);
    for (const [index, answer] of answers.slice(0, escapes.length).entries()) {
      expect(answer, `${JSON.stringify(escapes[index])} must be refused`).toEqual({ error: expect.any(String) });
      expect(JSON.stringify(answer)).not.toContain('TOP SECRET');
      expect(JSON.stringify(answer)).not.toContain('OUTSIDE');
    }
    // a symlink that stays inside the root is fine
    expect(answers[escapes.length]).toBe('File inner-link read successfully (5 lines). See contents below.');
    expect(JSON.stringify(result.messages)).not.toContain('TOP SECRET');
    expect(readFileSync(join(base, 'secret.txt'), 'utf8')).toBe('TOP SECRET');
    expect(existsSync(join(base, 'planted.txt'))).toBe(false);
    expect(existsSync(join(base, 'outside', 'planted.txt'))).toBe(false);
  });

  it('refuses a directory swapped for a symlink to outside between two calls', async () => {
    // turn 1: read data/x.txt (inside); between turns, data/ is replaced by a symlink to outside/; turn 2: read it again
    const { base, root } = workspace();
    mkdirSync(join(root, 'data'));
    writeFileSync(join(root, 'data', 'x.txt'), 'inside');
    const { name } = agent(
      [
        toolCallReply({ name: 'read_file', input: { filePath: 'data/x.txt' } }),
        () => {
          renameSync(join(root, 'data'), join(root, 'data-old'));
          symlinkSync(join(base, 'outside'), join(root, 'data'));
          return toolCallReply({ name: 'read_file', input: { filePath: 'data/x.txt' } });
        },
        textReply('done'),
      ] as unknown as ScriptedReply[],
      { rootDirectory: root },
    );
    const result = await worker().client.run(name, 'go');
    expect(outputs(result.messages)[1]).toEqual({ error: expect.stringContaining('resolves outside the root directory') });
    expect(JSON.stringify(result.messages)).not.toContain('OUTSIDE');
  });

  it('fails the run for other tools as before (only its own tools answer the model)', async () => {
    const { root } = workspace();
    const { name } = agent([toolCallReply({ name: 'no_such_tool', input: {} })], { rootDirectory: root });
    expect(
      await worker()
        .client.run(name, 'go')
        .then(() => undefined, runErrorOf),
    ).toMatchObject({ status: 'NOT_FOUND' });
  });
});

describe('what a run carries into the next of its chain', () => {
  it('a forged read cache in the start input fails the run INVALID_ARGUMENT before the model is called, never wedges it', async () => {
    const { root } = workspace();
    const { name, model } = agent([textReply('never')], { rootDirectory: root });
    // A client that is not keel's starts a "next run of a chain" whose read cache is not one.
    const handle = await worker().client.temporal.workflow.start(GENERATE_WORKFLOW, {
      taskQueue: worker().taskQueue,
      workflowId: `fs-forged-carry-${Date.now()}`,
      args: [
        {
          agent: name,
          messages: [{ role: 'user', content: [{ text: 'hi' }] }],
          continued: { iteration: 1, state: {}, middleware: { '0:filesystem': 'not a read cache' }, runs: 1 },
        } as never,
      ],
    });
    const error = await handle.result().then(() => undefined, runErrorOf);
    expect(error).toMatchObject({
      status: 'INVALID_ARGUMENT',
      // A run a client starts carries no chain state at all (continue-run.ts); the carry schema checks a genuine chain's.
      message: expect.stringContaining('`continued` is what keel hands the next run of a chain when a run continues as new') as unknown,
    });
    expect(model.requests).toHaveLength(0);
  }, 60_000);
});
