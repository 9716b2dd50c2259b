/**
 * Filesystem confinement against a concurrent attacker: a separate process flips a directory
 * and a file inside the root between what they are and symbolic links to outside, tens of
 * thousands of times, while 16 writes, edits and reads run at once through the `files`
 * activity's code. Afterwards every file outside the root is byte-identical and none was
 * created, and no read returned anything from outside. And a FIFO (in the root, or as a skill's
 * SKILL.md) is refused at once, never blocking one of libuv's four threads: ordinary file and
 * skills operations on the same process go on.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileOperationSchema, type FileOperation, type FileResult, type FileStamp } from '../src/features/filesystem/files';
import { runFileOperation as runParsed } from '../src/features/filesystem/activities/files';
import { runSkillOperation } from '../src/features/skills/activities/skills';
import { ROOT, spawnCommand } from './support/processes';

/** One file operation as the `files` activity runs it: parsed by its door, then run. */
const runFileOperation = (operation: FileOperation) => runParsed(FileOperationSchema.parse(operation));

/** Every file and directory under `dir`, by relative path, with a file's bytes (as text). */
function snapshot(dir: string, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) Object.assign(out, { [`${rel}/`]: '(directory)' }, snapshot(join(dir, entry.name), rel));
    else out[rel] = readFileSync(join(dir, entry.name), 'utf8');
  }
  return out;
}

const SWAP_MS = 10_000;
const CONCURRENT = 16;

describe('Filesystem under a concurrent symlink swap', () => {
  it('touches nothing outside the root and reads nothing from there, while writes, edits and reads go on', { timeout: 120_000 }, async () => {
    const base = mkdtempSync(join(tmpdir(), 'keel-fs-race-'));
    const root = join(base, 'root');
    const outside = join(base, 'outside');
    mkdirSync(join(root, 'sub'), { recursive: true });
    mkdirSync(outside);
    for (let index = 0; index < CONCURRENT; index++) {
      writeFileSync(join(outside, `f${index}.txt`), `outside ${index}\n`);
      writeFileSync(join(root, 'sub', `f${index}.txt`), `inside ${index}\n`);
      // Names only outside: a write of sub/<name> creates a new file in the root, the one outside must stay as it is.
      writeFileSync(join(outside, `only-outside-${index}.txt`), `outside only ${index}\n`);
    }
    writeFileSync(join(outside, 'target.txt'), 'outside target\n');
    writeFileSync(join(root, 'target.txt'), 'inside target\n');
    const before = snapshot(outside);

    const attacker = spawnCommand(process.execPath, [
      join(ROOT, 'test', 'fixtures', 'swap-symlinks.mjs'),
      String(SWAP_MS),
      `${join(root, 'sub')}=${outside}`,
      `${join(root, 'target.txt')}=${join(outside, 'target.txt')}`,
    ]);
    const counts = { ok: 0, refused: 0 };
    const leaked: string[] = [];
    const seen = (result: FileResult) => {
      counts.ok++;
      if (result.kind === 'text' && result.content.includes('outside')) leaked.push(result.content);
    };
    const refused = (error: unknown) => {
      counts.refused++;
      const status = (error as { status?: string }).status;
      // What a swap may cause: a refusal, a file that is not there this instant, a stamp that changed.
      if (!['PERMISSION_DENIED', 'NOT_FOUND', 'FAILED_PRECONDITION', 'INVALID_ARGUMENT', 'ABORTED'].includes(status ?? '')) throw error;
    };
    const until = Date.now() + SWAP_MS - 500;
    let written = 0;
    const lane = async (index: number) => {
      const file = `sub/f${index}.txt`;
      while (Date.now() < until) {
        const attempt = async () => {
          switch (written++ % 5) {
            case 0: {
              const read = await runFileOperation({ op: 'read', root, filePath: file });
              seen(read);
              const stamp = (read as { stamp: FileStamp }).stamp;
              seen(await runFileOperation({ op: 'write', root, filePath: file, content: `written ${index}\n`, read: stamp }));
              return;
            }
            case 1: {
              const read = await runFileOperation({ op: 'read', root, filePath: file });
              seen(read);
              const content = (read as { content: string }).content;
              const [word] = content.split(' ');
              seen(
                await runFileOperation({
                  op: 'edit',
                  root,
                  filePath: file,
                  edits: [{ oldString: word!, newString: `edited-${written}` }],
                  read: (read as { stamp: FileStamp }).stamp,
                }),
              );
              return;
            }
            case 2:
              seen(await runFileOperation({ op: 'write', root, filePath: `sub/new/f${index}-${written}.txt`, content: 'new\n' }));
              return;
            case 3:
              seen(await runFileOperation({ op: 'write', root, filePath: `sub/only-outside-${index}.txt`, content: `written ${written}\n` }));
              return;
            default:
              seen(await runFileOperation({ op: 'read', root, filePath: 'target.txt' }));
              seen(await runFileOperation({ op: 'list', root, dirPath: 'sub', recursive: true }));
          }
        };
        await attempt().catch(refused);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENT }, (_, index) => lane(index)));
    expect(await attacker.exited).toBe(0);
    const flips = Number(attacker.stdout().trim());
    console.log(`filesystem race: ${flips} flips in ${SWAP_MS} ms; ${counts.ok} operations succeeded, ${counts.refused} were refused`);

    expect(snapshot(outside), 'files outside the root must be byte-identical, none created').toEqual(before);
    expect(leaked, 'no read may return content from outside the root').toEqual([]);
    // The race was real: many flips, and many operations both succeeded and were refused meanwhile.
    expect(flips).toBeGreaterThan(1000);
    expect(counts.ok).toBeGreaterThan(100);
    expect(counts.refused).toBeGreaterThan(10);
  });
});

describe('a FIFO where a file is expected', () => {
  it('is refused at once, in a Filesystem root and as a SKILL.md, and ordinary file and skills calls go on', { timeout: 60_000 }, async () => {
    const base = mkdtempSync(join(tmpdir(), 'keel-fifo-'));
    const root = join(base, 'root');
    const skills = join(base, 'skills');
    mkdirSync(root);
    mkdirSync(join(skills, 'good'), { recursive: true });
    mkdirSync(join(skills, 'evil'));
    execFileSync('mkfifo', [join(root, 'pipe'), join(skills, 'evil', 'SKILL.md'), join(skills, 'good', 'notes.fifo')]);
    writeFileSync(join(root, 'notes.txt'), 'plain\n');
    writeFileSync(join(skills, 'good', 'SKILL.md'), '---\nname: good\ndescription: A good skill.\n---\nDo good.\n');
    const timed = <T>(work: Promise<T>, what: string) =>
      Promise.race([
        work,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} did not answer within 3 s (a thread blocked?)`)), 3000)),
      ]);

    // More FIFO reads than libuv has threads: were one to block, the pool would be gone.
    const reads = await Promise.all(
      Array.from({ length: 8 }, () =>
        timed(
          runFileOperation({ op: 'read', root, filePath: 'pipe' }).then(
            () => 'read',
            (error: Error) => error.message,
          ),
          'read of a FIFO',
        ),
      ),
    );
    expect(reads).toEqual(Array(8).fill('"pipe" is a FIFO (named pipe), not a regular file; only regular files are read or written'));
    const write = await timed(
      runFileOperation({ op: 'write', root, filePath: 'pipe', content: 'x' }).then(
        () => 'written',
        (error: Error) => error.message,
      ),
      'write to a FIFO',
    );
    expect(write).toBe('"pipe" is a FIFO (named pipe), not a regular file; only regular files are read or written');
    const resource = await timed(
      runSkillOperation({ op: 'readResource', dir: join(skills, 'good'), filePath: 'notes.fifo' }).then(
        () => 'read',
        (error: Error) => error.message,
      ),
      'read of a FIFO resource',
    );
    expect(resource).toBe('"notes.fifo" is a FIFO (named pipe), not a regular file; only regular files are read or written');

    // The same process still reads files and scans skills (the FIFO SKILL.md is skipped).
    expect(await timed(runFileOperation({ op: 'read', root, filePath: 'notes.txt' }), 'read')).toMatchObject({ kind: 'text', content: 'plain\n' });
    const scan = await timed(runSkillOperation({ op: 'scan', skillPaths: [skills], preload: [] }), 'skills scan');
    expect(scan).toMatchObject({ kind: 'scan', skills: [{ name: 'good', description: 'A good skill.' }] });
    expect(await timed(runFileOperation({ op: 'list', root, dirPath: '.', recursive: false }), 'list')).toMatchObject({ kind: 'list' });
  });
});
