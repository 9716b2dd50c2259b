/**
 * The one hardening layer of every HTTP server keel starts (`keel ui`, `keel codec-server`, a
 * worker's metrics endpoint, and any server still to come): a server gives its routes to
 * `startGuardedServer` and they are reached only through these checks, in this order:
 *
 * 1. Host: without a token, a request must name this server in its Host header (a loopback name
 *    or the bound address, with the bound port), so a page whose name was rebound to 127.0.0.1
 *    (DNS rebinding) is refused (421) before anything runs.
 * 2. CORS: answered only for the origins the server names (the Temporal Web UI's, for the codec
 *    server); a preflight never reaches the routes.
 * 3. Token: a server off loopback needs one of at least 16 characters (it refuses to start
 *    without); with one, every request carries it (`Authorization: Bearer`, or the HttpOnly
 *    cookie a page was given), compared in constant time (401 otherwise).
 * 4. Body: a body over the server's limit is refused with 413 as soon as its length says so, or
 *    as soon as that many bytes arrived; it is never buffered beyond the limit.
 * 5. Changes (any method but GET, HEAD, OPTIONS): a browser's `Origin` must be the server's own
 *    or one of its named origins (403); a server may also require a header of its own, which
 *    no cross-site form can send, on every path but the protocol endpoints it names (`/mcp`, `/a2a`).
 *
 * Node side.
 */
import { serve, type ServerType } from '@hono/node-server';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { getCookie, setCookie } from 'hono/cookie';
import { cors } from 'hono/cors';
import { KeelError } from '../core/errors';
import type { StatusName } from '../core/status';

/** True for an address only this machine reaches. */
export const isLoopback = (host: string): boolean => host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);

/** Methods that change nothing: the only ones a page of another origin may send unchecked. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What the guard checks, besides the Host (set from the bound address). */
export interface GuardOptions {
  /** The server as messages name it (`keel ui`). */
  name: string;
  /** Its token: required off loopback; absent, only requests naming this server in Host are answered. */
  token?: string | undefined;
  /** The environment variable a token comes from, named when one is missing (`KEEL_UI_TOKEN`). */
  tokenVariable: string;
  /** The largest request body taken, in bytes. */
  maxBodyBytes: number;
  /** Pages of other origins that may call it (answered by CORS, allowed to make changes), with the headers they send; only under `paths` when named. */
  crossOrigin?: { origins: string[]; allowHeaders: string[]; paths?: readonly string[] };
  /** A header every change must carry, which no cross-site form can set (`x-keel-ui`). */
  changeHeader?: string;
  /** Paths (and the paths below them) whose changes need no `changeHeader` (protocol endpoints other programs call: `/mcp`, `/a2a`); the Origin check still holds. */
  openPaths?: readonly string[];
  /**
   * The server verifies who asks itself (`auth:`, an OIDC token or a trusted proxy's user): it may
   * listen off loopback without a token, and the Host check (against DNS rebinding, which can
   * forge neither) is left out, so a reverse proxy may name the public host.
   */
  identified?: boolean;
  /** Paths (and below) whose requests carry a credential of their own (a signed decision link): no token needed there. */
  tokenFreePaths?: readonly string[];
  /** Takes the token once as `?token=` and keeps it in this HttpOnly, SameSite=Strict cookie (how a page signs in). */
  tokenCookie?: string;
}

/** Options of `startGuardedServer`. */
export interface GuardedServerOptions extends GuardOptions {
  /** The address to listen on. */
  host: string;
  /** The port (0: a free one). */
  port: number;
  /** The server's routes, reached only through the guard. */
  app: Hono;
  /** Serves only while something else keeps the process alive (a worker's metrics). */
  unref?: boolean;
}

/** A server listening behind the guard. */
export interface GuardedServer {
  /** `http://host:port`, as bound. */
  origin: string;
  /** The bound port. */
  port: number;
  close(): Promise<void>;
}

/** The answer of a refusal: `{ error: { status, message } }`, the message naming the server. */
const refuse = (c: Context, name: string, status: StatusName, message: string, http: 401 | 403 | 413 | 421) =>
  c.json({ error: { status, message: `${name}: ${message}` } }, http);

/** Compares a given token with the expected one in constant time (digests of equal length, whatever was sent). */
function tokenMatcher(token: string): (given: string | undefined) => boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  const expected = digest(token);
  return (given) => given !== undefined && timingSafeEqual(digest(given), expected);
}

/** The token check: a preflight and the token-free paths pass; the token comes as a Bearer header, or once in the address (then in a cookie). */
function tokenCheck({
  name,
  token,
  tokenVariable,
  tokenCookie,
  tokenFreePaths,
  preflights,
}: Pick<GuardOptions, 'name' | 'tokenVariable' | 'tokenCookie'> & {
  token: string;
  tokenFreePaths: readonly string[];
  preflights: boolean;
}): MiddlewareHandler {
  const matches = tokenMatcher(token);
  return async (c, next) => {
    if (c.req.method === 'OPTIONS' && preflights) return next(); // a preflight carries no credentials
    if (underAny(tokenFreePaths, c.req.path)) return next();
    if (tokenCookie) {
      const given = c.req.query('token');
      if (given !== undefined && matches(given)) {
        setCookie(c, tokenCookie, given, { httpOnly: true, sameSite: 'Strict', path: '/' });
        return c.redirect('/');
      }
      if (matches(getCookie(c, tokenCookie))) return next();
    }
    const bearer = /^Bearer (.+)$/.exec(c.req.header('authorization') ?? '')?.[1];
    if (!matches(bearer))
      return refuse(
        c,
        name,
        'UNAUTHENTICATED',
        tokenCookie
          ? `this server needs its token: open the address it printed (with ?token=), or send Authorization: Bearer <${tokenVariable}>`
          : `this server needs its token: send Authorization: Bearer <${tokenVariable}>`,
        401,
      );
    await next();
  };
}

/** True when `path` is one of `paths` or under one. */
const underAny = (paths: readonly string[], path: string) => paths.some((open) => path === open || path.startsWith(`${open}/`));

/**
 * The guard as a Hono app: mount a server's routes on it (`guard.route('/', app)`).
 * `allowedHosts` gives the Host values answered without a token (lower case, with the port).
 */
function createGuard({
  name,
  token,
  tokenVariable,
  maxBodyBytes,
  crossOrigin,
  changeHeader,
  openPaths = [],
  tokenFreePaths = [],
  identified = false,
  tokenCookie,
  allowedHosts,
}: GuardOptions & { allowedHosts: () => ReadonlySet<string> }): Hono {
  const guard = new Hono();
  // With a token, a rebound page lacks it anyway (the cookie is SameSite=Strict and the Bearer header is never sent for it).
  if (token === undefined && !identified)
    guard.use(async (c, next) => {
      const host = c.req.header('host');
      if (!host || !allowedHosts().has(host.toLowerCase()))
        return refuse(c, name, 'PERMISSION_DENIED', `unexpected Host header "${host ?? ''}": this server answers only requests addressed to it`, 421);
      await next();
    });
  const origins = new Set(crossOrigin?.origins ?? []);
  // Another origin is trusted only on the paths it was named for.
  const trusted = { has: (origin: string, path: string) => origins.has(origin) && (!crossOrigin?.paths || underAny(crossOrigin.paths, path)) };
  if (crossOrigin)
    guard.use((c, next) =>
      cors({
        origin: (origin) => (trusted.has(origin, c.req.path) ? origin : null),
        allowMethods: ['GET', 'POST', 'OPTIONS'],
        allowHeaders: crossOrigin.allowHeaders,
        credentials: true,
        maxAge: 600,
      })(c, next),
    );
  if (token !== undefined) guard.use(tokenCheck({ name, token, tokenVariable, tokenCookie, tokenFreePaths, preflights: crossOrigin !== undefined }));
  // A change from another origin is refused before its body is read, so no such page makes the server take one in.
  guard.use(async (c, next) => {
    if (SAFE_METHODS.has(c.req.method)) return next();
    const open = underAny(openPaths, c.req.path);
    if (changeHeader !== undefined && !c.req.header(changeHeader) && !open)
      return refuse(c, name, 'PERMISSION_DENIED', `a change needs the ${changeHeader} header`, 403);
    const origin = c.req.header('origin');
    const host = c.req.header('host');
    if (origin !== undefined && origin !== `http://${host}` && origin !== `https://${host}` && !trusted.has(origin, c.req.path))
      return refuse(c, name, 'PERMISSION_DENIED', `a change from origin ${origin} is refused`, 403);
    await next();
  });
  const limitBody: MiddlewareHandler = bodyLimit({
    maxSize: maxBodyBytes,
    // The rest of the body is discarded as it comes (for at most 0.5 s, @hono/node-server's lingering close), never kept.
    onError: (c) => refuse(c, name, 'RESOURCE_EXHAUSTED', `the request body is over ${maxBodyBytes} bytes, the most this server takes`, 413),
  });
  guard.use(limitBody);
  return guard;
}

/** The shortest token taken: anything shorter is guessed too easily. */
const MIN_TOKEN_LENGTH = 16;

/**
 * Refuses (FAILED_PRECONDITION) to listen off loopback without a token, or with a token shorter
 * than 16 characters; a server that does other work before it listens (connecting to Temporal)
 * calls it first, so the mistake is said at once.
 */
export function assertListenable({
  name,
  host,
  token,
  tokenVariable,
  identified = false,
}: Pick<GuardOptions, 'name' | 'token' | 'tokenVariable' | 'identified'> & { host: string }): void {
  if (token !== undefined && token.length < MIN_TOKEN_LENGTH)
    throw new KeelError(
      'FAILED_PRECONDITION',
      `${name}: ${tokenVariable} is ${token.length} characters; use a long random string (at least ${MIN_TOKEN_LENGTH})`,
    );
  if (!isLoopback(host) && token === undefined && !identified)
    throw new KeelError(
      'FAILED_PRECONDITION',
      `${name} listens on ${host}, which is not loopback: set ${tokenVariable} (a long random string) so only those given it can reach it, or listen on 127.0.0.1`,
    );
}

/**
 * Starts `app` behind the guard on `host:port`. Refuses (FAILED_PRECONDITION) an address off
 * loopback without a token; a port that is taken rejects with the listener's error.
 */
export async function startGuardedServer({ host, port, app, unref = false, ...options }: GuardedServerOptions): Promise<GuardedServer> {
  assertListenable({ ...options, host });
  const hosts = new Set<string>();
  const guard = createGuard({ ...options, allowedHosts: () => hosts });
  guard.route('/', app);
  const server: ServerType = await new Promise((resolve, reject) => {
    const started = serve({ fetch: guard.fetch, hostname: host, port }, () => resolve(started));
    started.once('error', reject);
  });
  if (unref) server.unref();
  const bound = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  for (const name of [shown, ...(isLoopback(host) ? ['localhost', '127.0.0.1', '[::1]'] : [])]) {
    hosts.add(`${name}:${bound}`.toLowerCase());
    if (bound === 80) hosts.add(name.toLowerCase());
  }
  return {
    origin: `http://${shown}:${bound}`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Open event streams and kept-alive connections would keep the server from closing.
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
