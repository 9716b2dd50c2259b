/**
 * What `keel dev`'s watcher reports, on a real directory: a burst of saves once, with the file;
 * a new code file beside a watched one; never an editor's swap file, a file of another kind, or
 * anything in a subdirectory (node_modules).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SourceWatcher, type SourceChange } from './source-watcher';

const watchers: SourceWatcher[] = [];
afterEach(() => watchers.splice(0).forEach((watcher) => watcher.close()));

function watching(files: string[]): SourceChange[] {
  const changes: SourceChange[] = [];
  const watcher = new SourceWatcher({ onChange: (change) => changes.push(change), debounceMs: 50 });
  watcher.add(files);
  watchers.push(watcher);
  return changes;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

describe('the source watcher', () => {
  it('reports a burst of saves once, and a new code file beside a watched one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-watch-'));
    const agents = join(dir, 'agents.ts');
    writeFileSync(agents, 'export {};\n');
    const changes = watching([agents, join(dir, 'temporal.yaml')]);
    writeFileSync(agents, 'export const a = 1;\n');
    writeFileSync(agents, 'export const a = 2;\n');
    await settle();
    expect(changes.map((change) => change.files)).toEqual([[agents]]);
    writeFileSync(join(dir, 'helper.mts'), 'export {};\n');
    await settle();
    expect(changes.map((change) => change.files)).toEqual([[agents], [join(dir, 'helper.mts')]]);
  });

  it('ignores swap files, files of other kinds and subdirectories', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-watch-'));
    const agents = join(dir, 'agents.ts');
    writeFileSync(agents, 'export {};\n');
    mkdirSync(join(dir, 'node_modules'));
    const changes = watching([agents]);
    writeFileSync(join(dir, '.agents.ts.swp'), 'x');
    writeFileSync(join(dir, 'agents.ts~'), 'x');
    writeFileSync(join(dir, 'notes.txt'), 'x');
    writeFileSync(join(dir, 'node_modules', 'dep.js'), 'x');
    await settle();
    expect(changes).toEqual([]);
  });
});
