// The page of `keel ui`, built at pack time (and by `npm install` in a checkout) into dist/web,
// which the UI server serves; nothing is fetched at run time.
import preact from '@preact/preset-vite';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  plugins: [preact()],
  build: { outDir: fileURLToPath(new URL('../dist/web', import.meta.url)), emptyOutDir: true, sourcemap: false },
  logLevel: 'warn',
});
