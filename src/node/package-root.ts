/** Where the keel package lives (its package.json), from source or from dist/, and its version. Node side. */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Root of the keel package (where package.json lives). */
export const PACKAGE_ROOT = resolve(__dirname, '..', '..');

/** The keel package's version. */
export function keelVersion(): string {
  return (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}
