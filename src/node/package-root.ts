/** Where the keel package lives (its package.json), from source or from dist/. Node side. */
import { resolve } from 'node:path';

/** Root of the keel package (where package.json lives). */
export const PACKAGE_ROOT = resolve(__dirname, '..', '..');
