/**
 * Watches a project's source files for `keel dev`: one `fs.watch` per directory that holds one
 * (the kernel's notifications, no polling), not its subdirectories, so node_modules, .keel and
 * dist below are never watched. A change counts when it is to one of the files, or to a code file
 * in one of those directories (one a module is about to import; not a dot-file, not an editor's
 * swap or backup file). A burst of them (an editor's save writes, renames and chmods) is reported
 * once, `debounceMs` after the last, with the time of the first. Node side.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/** Files a module may import: a new one in a watched directory counts as a change too. */
const CODE_FILE = /^[^.].*\.(?:[cm]?[jt]s|[jt]sx)$/;

/** A burst of changes. */
export interface SourceChange {
  /** The files that changed (absolute paths), in the order first seen. */
  files: string[];
  /** When the first of them was seen (ms since the epoch). */
  firstAt: number;
}

/** Options of `SourceWatcher`. */
export interface SourceWatcherOptions {
  /** Called once per burst of changes. */
  onChange: (change: SourceChange) => void;
  /** Quiet time that ends a burst (default 100 ms). */
  debounceMs?: number;
}

/** Watches files, and code files beside them, until closed. */
export class SourceWatcher {
  private readonly watchers = new Map<string, FSWatcher>();
  private readonly files = new Set<string>();
  private burst: SourceChange | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly onChange: (change: SourceChange) => void;
  private readonly debounceMs: number;

  constructor({ onChange, debounceMs = 100 }: SourceWatcherOptions) {
    this.onChange = onChange;
    this.debounceMs = debounceMs;
  }

  /** Watches `files` too (absolute or relative to the working directory), and their directories. */
  add(files: readonly string[]): void {
    if (this.closed) return;
    for (const given of files) {
      const file = resolve(given);
      this.files.add(file);
      const directory = dirname(file);
      if (this.watchers.has(directory)) continue;
      try {
        const watcher = watch(directory, { persistent: false }, (_event, name) => this.saw(directory, name));
        // A directory that goes away (or cannot be read any more) is no longer watched; its files come back with the next worker's list.
        watcher.on('error', () => this.unwatch(directory));
        this.watchers.set(directory, watcher);
      } catch {
        // A directory that does not exist (yet): nothing in it can change.
      }
    }
  }

  /** How many files and directories are watched. */
  counts(): { files: number; directories: number } {
    return { files: this.files.size, directories: this.watchers.size };
  }

  /** Stops watching; a burst not yet reported is dropped. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const directory of [...this.watchers.keys()]) this.unwatch(directory);
  }

  private unwatch(directory: string): void {
    this.watchers.get(directory)?.close();
    this.watchers.delete(directory);
  }

  private saw(directory: string, name: string | Buffer | null): void {
    if (this.closed) return;
    const file = name === null ? undefined : join(directory, name.toString());
    if (file !== undefined && !this.files.has(file) && !CODE_FILE.test(basename(file))) return;
    const changed = file ?? directory;
    this.burst ??= { files: [], firstAt: Date.now() };
    if (!this.burst.files.includes(changed)) this.burst.files.push(changed);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      const burst = this.burst!;
      this.burst = undefined;
      this.onChange(burst);
    }, this.debounceMs);
  }
}
