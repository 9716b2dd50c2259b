/**
 * Builds the chat page (`npx vite build examples/chat`) or serves it while you edit (`npx vite
 * examples/chat`). The page talks to `keel serve` at `?keel=<url>` (default: the page's own
 * origin); a page on another origin needs that origin in `serve.origins` (docs/chat.md).
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  esbuild: { jsx: 'automatic' },
  logLevel: 'warn',
});
