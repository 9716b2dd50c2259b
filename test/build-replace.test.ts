/**
 * `npm pack` rebuilds dist/ in the checkout while other processes read it (a `keel ui` serving
 * dist/web, the UI tests of the same suite). The build goes to a sibling directory and then
 * takes dist/'s place, so a reader never finds a half-emptied or half-written page: a separate
 * process reads the page in a loop while the directory is replaced again and again.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { replaceDirectory } from '../scripts/build-ui';

/** Writes a page whose two files both name `version`, in a new directory `dir`. */
function writePage(dir: string, version: number): void {
  mkdirSync(join(dir, 'assets'), { recursive: true });
  writeFileSync(join(dir, 'index.html'), `<html>${'x'.repeat(64 * 1024)}${version}</html>`);
  writeFileSync(join(dir, 'assets', 'app.js'), `// ${version}`);
}

/** What a reader saw: reads of a whole page, instants with no page, and anything else. */
interface Seen {
  whole: number;
  absent: number;
  broken: string[];
}

/** The reader: reads the page until told to stop on stdin, then prints what it saw. */
const READER = `
const { readFileSync, existsSync } = require('node:fs');
const { join } = require('node:path');
const root = process.argv[1];
const seen = { whole: 0, absent: 0, broken: [] };
let stop = false;
const read = (file) => { try { return readFileSync(join(root, file), 'utf8'); } catch { return undefined; } };
process.stdin.on('data', () => { stop = true; });
function look() {
  for (let i = 0; i < 200; i++) {
    const html = read('index.html');
    if (html === undefined) {
      // No page at all is the instant between two renames; a directory without its page (read
      // twice) is one being emptied or written in place.
      if (existsSync(root) && read('index.html') === undefined) seen.broken.push('the directory without index.html');
      else seen.absent++;
      continue;
    }
    if (!/\\d+<\\/html>$/.test(html)) { seen.broken.push('index.html cut short'); continue; }
    if (read('assets/app.js') !== undefined) seen.whole++;
    else if (existsSync(root) && read('assets/app.js') === undefined) seen.broken.push('index.html without its assets');
    else seen.absent++;
  }
  if (stop) process.stdout.write(JSON.stringify(seen));
  else setImmediate(look);
}
process.stdout.write('ready\\n');
look();
`;

describe('building dist/ in a checkout others read', () => {
  it('replaces the page whole: a reader in another process never sees it emptied or half written', async () => {
    const base = mkdtempSync(join(tmpdir(), 'keel-replace-'));
    const target = join(base, 'web');
    writePage(target, 0);
    const reader = spawn(process.execPath, ['-e', READER, target], { stdio: ['pipe', 'pipe', 'inherit'] });
    let output = '';
    reader.stdout.setEncoding('utf8');
    await new Promise<void>((resolve) =>
      reader.stdout.on('data', (chunk: string) => {
        output += chunk;
        if (output.startsWith('ready\n')) resolve();
      }),
    );
    for (let version = 1; version <= 150; version++) {
      const next = `${target}.next-${process.pid}`;
      writePage(next, version);
      replaceDirectory(target, next);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const done = new Promise<void>((resolve) => reader.on('exit', () => resolve()));
    reader.stdin.end('stop');
    await done;
    const seen = JSON.parse(output.slice('ready\n'.length)) as Seen;
    expect(seen.broken).toEqual([]);
    expect(seen.whole).toBeGreaterThan(seen.absent);
    // Nothing is left beside it: no half-built or old copy.
    expect(readdirSync(base)).toEqual(['web']);
  });
});
