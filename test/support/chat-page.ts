/**
 * The example chat page (examples/chat, React and `@ai-sdk/react`), built once with Vite into
 * .keel/chat-page (built again when its sources or the lockfile change) and served by a static
 * server of its own, on an origin other than keel serve's, as a web app's page would be.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, resolve } from 'node:path';
const ROOT = resolve(__dirname, '..', '..');

const SOURCE = join(ROOT, 'examples', 'chat');
const OUT = join(ROOT, '.keel', 'chat-page');
const STAMP = join(OUT, '.source-hash');

/** Builds the page unless the build there is of the same sources. */
export async function buildChatPage(): Promise<string> {
  const hash = createHash('sha256');
  for (const file of readdirSync(SOURCE).sort()) hash.update(file).update(readFileSync(join(SOURCE, file)));
  hash.update(readFileSync(join(ROOT, 'package-lock.json')));
  const digest = hash.digest('hex');
  if (existsSync(STAMP) && readFileSync(STAMP, 'utf8') === digest) return OUT;
  const { build } = await import('vite');
  await build({ configFile: join(SOURCE, 'vite.config.mts'), logLevel: 'error', build: { outDir: OUT, emptyOutDir: true } });
  writeFileSync(STAMP, digest);
  return OUT;
}

const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };

/** Serves `root` on loopback; its origin. */
export async function serveStatic(root: string): Promise<{ origin: string; close: () => Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const path = normalize(new URL(request.url ?? '/', 'http://x').pathname).replace(/^(\.\.[/\\])+/, '');
    const file = join(root, path === '/' ? 'index.html' : path);
    if (!file.startsWith(root) || !existsSync(file)) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
