/**
 * `keel ui`: the approval inbox and the live view of runs, served by keel itself. Everything is
 * read and sent through Temporal (visibility, the runs' memos, queries, updates), so it works
 * against the embedded dev server and a real cluster alike. The page is built at pack time
 * (ui/, Vite) and served from dist/web; nothing is fetched at run time.
 *
 * Security: the routes sit behind keel's one HTTP guard (src/node/http-guard.ts): loopback by
 * default, any other address needs a token (KEEL_UI_TOKEN), given once as `?token=` and kept in
 * an HttpOnly, SameSite=Strict cookie; without a token every request must name this server in
 * its Host header (no DNS rebinding); a body over 2 MiB is refused; every change must come from
 * the page's own origin and carry the `X-Keel-UI` header, which no cross-site form can set. The
 * page never sees the config: only the namespace, task queue, the Temporal Web UI's address and
 * the user's name. Node side.
 */
import { temporalUiUrlOf } from './addresses';
import { serveStatic } from '@hono/node-server/serve-static';
import { existsSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { Hono, type Context } from 'hono';
import { secureHeaders } from 'hono/secure-headers';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import type { HoldView } from '../client/holds';
import { KeelClient } from '../client/keel-client';
import type { KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import { parseDecision } from '../core/holds';
import { RunLifecycleSchema } from '../core/run';
import { describeZodError } from '../core/schema-errors';
import { httpStatusOf } from '../core/status';
import { SteerInputSchema, steerInputProblem } from '../core/steering';
import { assertListenable, isLoopback, startGuardedServer, type GuardedServer } from '../node/http-guard';
import { keelVersion } from '../node/package-root';
import { assertMcpServable, mcpHttpHandler } from '../protocols/mcp';
import { loadExposedAgents, type ExposedAgent } from '../protocols/exposed-agents';
import { a2aHttpHandler, assertA2AServable } from '../protocols/a2a';
import { assertChatServable, ChatEndpoint } from '../protocols/chat';
import { DECIDE_PATH, decisionLinkRoutes } from './decide-page';
import { EventHub } from './event-hub';
import { getConnInfo } from '@hono/node-server/conninfo';
import { authenticator, vouched, type Authenticate, type Identity } from '../security/identity';
import { loadSigningKeys, type SigningKeys } from '../security/signing-keys';
import type { Decider } from '../protocols/chat';
import { runView } from './run-view';
import { accessOf, type Access, type AccessAction } from '../security/access';
import { listRuns } from '../client/runs';

/** Where the built page is: dist/web of the package (from src/ui or dist/ui alike). */
export const WEB_ROOT = resolve(__dirname, '..', '..', 'dist', 'web');

const TOKEN_COOKIE = 'keel_ui_token';
/** The largest request body: a prompt, a steer or a decision (a run's input over 2 MiB needs External Storage, which the page does not use). */
const MAX_BODY_BYTES = 2 * 1024 * 1024;
/** How long one listing of pending holds answers the inbox. */
const INBOX_FRESH_MS = 2000;
/** How long a run may take to answer with its holds in full. */
const HOLDS_QUERY_MS = 5000;

export interface UiServerOptions {
  config: KeelConfig;
  /** Overrides `ui.host`. */
  host?: string;
  /** Overrides `ui.port` (0: a free port). */
  port?: number;
  /** Required when `host` is not loopback (default: $KEEL_UI_TOKEN). */
  token?: string;
  /** The name decisions are recorded with when the page gives none, which the page shows as its default (default `<user>@<host>`). */
  user?: string;
  /** The built page (default dist/web). */
  webRoot?: string;
  /** Serves every defined agent at /mcp and /a2a when `serve.agents` names none and the server is on loopback (`keel dev`). */
  exposeAll?: boolean;
}

export interface UiServer {
  /** The address to open (with `?token=` when a token is needed). */
  url: string;
  /** The address without the token. */
  origin: string;
  /** Runs watched for open pages now (one watcher per run). */
  watched(): number;
  /** The agents served as MCP tools at `${origin}/mcp` (none: no /mcp). */
  mcpAgents: string[];
  /** The agents served over A2A at `${origin}/a2a/<agent>` (none: no /a2a). */
  a2aAgents: string[];
  /** The agents served to web apps with the AI SDK's chat protocol at `${origin}/api/chat/<agent>` (session agents only). */
  chatAgents: string[];
  /** Why agents are not served, or not over one protocol (an agent module that does not load, an SDK not installed). */
  serveProblem?: string;
  close(): Promise<void>;
}

const StartSchema = z
  .object({
    agent: z.string().min(1),
    prompt: z.string().min(1),
    /** Sends the prompt as a turn of this session (a server-managed agent). */
    sessionId: z.string().min(1).optional(),
  })
  .strict();

/** A fork from the run view: the turn, and the edits (docs/fork.md). */
const ForkSchema = z
  .object({
    at: z.number().int().min(0),
    message: z.string().optional(),
    toolResults: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

/** Who the page says decides: a short name, recorded as given (the name "deciding as" shows). */
const UserSchema = z.string().trim().min(1).max(80);

/** The answer for a failure: its status as HTTP status, and its message. */
function failure(c: Context, error: unknown) {
  const keel = KeelError.isInstance(error) ? error : undefined;
  const status = keel?.status ?? 'UNKNOWN';
  return c.json({ error: { status, message: error instanceof Error ? error.message : String(error) } }, httpStatusOf(status) as 400);
}

const bad = (c: Context, message: string) => c.json({ error: { status: 'INVALID_ARGUMENT', message } }, 400);

/** Answers with what `work` gives, as JSON, or with its failure. */
async function answer(c: Context, work: () => Promise<object>) {
  try {
    return c.json(await work());
  } catch (error) {
    return failure(c, error);
  }
}

/** Reads a JSON body, or says what was wrong with it. */
async function jsonBody(c: Context): Promise<{ ok: true; value: unknown } | { ok: false; message: string }> {
  if (!(c.req.header('content-type') ?? '').startsWith('application/json')) return { ok: false, message: 'send the body as application/json' };
  try {
    return { ok: true, value: await c.req.json() };
  } catch (error) {
    return { ok: false, message: `the body is not JSON: ${(error as Error).message}` };
  }
}

/**
 * Who asks (docs/auth.md): with auth on, each request's verified identity; and who a decision is
 * recorded as: that identity, vouched for with a proof the run checks, or else the route's name.
 */
interface Who {
  /** The workers' signing keys (decision links, decider proofs), read once, on first use. */
  keys: () => SigningKeys;
  authenticate: Authenticate | undefined;
  identities: WeakMap<Request, Identity>;
  decider: (request: Request, fallback: string) => Decider;
  /** What the request's identity may do (docs/tenants.md): every route checks it before it reads or changes a run. */
  access: (request: Request) => Access;
}

/** The identities of requests, and the decisions made from them, for `config`. */
function whoAsks(config: KeelConfig): Who {
  const authenticate = config.auth ? authenticator(config.auth, config.baseDir) : undefined;
  const identities = new WeakMap<Request, Identity>();
  let loaded: SigningKeys | undefined;
  const keys = () => (loaded ??= loadSigningKeys(config));
  return {
    keys,
    authenticate,
    identities,
    access: (request) => accessOf(config, identities.get(request)),
    decider: (request, fallback) => (runId, decision) => {
      const identity = identities.get(request);
      return identity ? vouched(keys(), identity, runId, decision) : { ...decision, decidedBy: decision.decidedBy ?? fallback };
    },
  };
}

/** What the API's routes work with. */
interface UiRoutes {
  client: KeelClient;
  config: KeelConfig;
  hub: EventHub;
  user: string;
  who: Who;
  temporalUiUrl: string | undefined;
  inbox: InboxListing;
}

/** The agents' protocols: MCP and A2A for programs (their SDKs answer, with their own headers), the AI SDK's chat protocol for web apps. */
function protocolRoutes(
  app: Hono,
  {
    mcp,
    a2a,
    chat,
    who,
  }: { mcp: ReturnType<typeof mcpHttpHandler> | undefined; a2a: ReturnType<typeof a2aHttpHandler> | undefined; chat: ChatEndpoint | undefined; who: Who },
): void {
  // MCP and A2A clients are programs, not the page: the protocols' SDKs answer them (their own headers, no CSP).
  if (mcp) app.all('/mcp', (c) => mcp.handle(c.req.raw, who.access(c.req.raw)));
  if (a2a) {
    app.get('/a2a/:agent/.well-known/agent-card.json', (c) => {
      const card = a2a.card(c.req.param('agent'));
      return card ? c.json(card) : c.json({ error: { status: 'NOT_FOUND', message: `no A2A agent "${c.req.param('agent')}" here` } }, 404);
    });
    app.post('/a2a/:agent', (c) => a2a.handle(c.req.param('agent'), c.req.raw, who.access(c.req.raw)));
  }
  app.all('/a2a/*', (c) =>
    c.json(
      {
        error: {
          status: 'NOT_FOUND',
          message: `no such A2A endpoint: ${c.req.method} ${c.req.path} (an agent's card is /a2a/<agent>/.well-known/agent-card.json)`,
        },
      },
      404,
    ),
  );
  // The AI SDK's chat protocol, for pages of this origin and of the web apps serve.origins names (useChat sends no header of keel's).
  if (chat) {
    app.post('/api/chat/:agent', (c) =>
      chat.send(c.req.param('agent'), c.req.raw, who.decider(c.req.raw, `chat:${c.req.param('agent')}`), who.access(c.req.raw)),
    );
    app.get('/api/chat/:agent/:chatId/stream', (c) => chat.resume(c.req.param('agent'), c.req.param('chatId'), c.req.raw, who.access(c.req.raw)));
    app.get('/api/chat/:agent/:chatId', (c) => chat.history(c.req.param('agent'), c.req.param('chatId'), who.access(c.req.raw)));
  }
}

/** Builds the app (its routes; the guard is startGuardedServer's) for `client`. */
function createUiApp({
  client,
  config,
  hub,
  user,
  webRoot,
  mcp,
  a2a,
  chat,
  who,
}: {
  client: KeelClient;
  config: KeelConfig;
  hub: EventHub;
  user: string;
  webRoot: string;
  mcp: ReturnType<typeof mcpHttpHandler> | undefined;
  a2a: ReturnType<typeof a2aHttpHandler> | undefined;
  chat: ChatEndpoint | undefined;
  who: Who;
}): Hono {
  const app = new Hono();
  // With auth on, everything but the page's own files answers only a verified identity.
  if (who.authenticate) {
    const authenticate = who.authenticate;
    app.use(async (c, next) => {
      if (!/^\/(api|mcp|a2a|decide)(\/|$)/.test(c.req.path)) return next();
      try {
        who.identities.set(c.req.raw, await authenticate(c.req.raw, getConnInfo(c).remote.address));
      } catch (error) {
        return c.json({ error: { status: 'UNAUTHENTICATED', message: (error as Error).message } }, 401);
      }
      return next();
    });
  }
  protocolRoutes(app, { mcp, a2a, chat, who });
  app.use(secureHeaders({ contentSecurityPolicy: { defaultSrc: ["'self'"], imgSrc: ["'self'", 'data:'], styleSrc: ["'self'", "'unsafe-inline'"] } }));
  const routes: UiRoutes = { client, config, hub, user, who, temporalUiUrl: temporalUiUrlOf(config), inbox: inboxListing(client) };
  readingRoutes(app, routes);
  app.get('/api/runs/:runId/events', async (c) => {
    try {
      await who.access(c.req.raw).check(client.temporal, c.req.param('runId'), 'read');
    } catch (error) {
      return failure(c, error);
    }
    return runEventStream(c, hub, c.req.param('runId'));
  });
  changingRoutes(app, routes);
  decisionLinkRoutes(app, { client, keys: who.keys, decider: who.decider, access: who.access });
  app.all('/api/*', (c) => c.json({ error: { status: 'NOT_FOUND', message: `no such endpoint: ${c.req.method} ${c.req.path}` } }, 404));

  const root = relative(process.cwd(), webRoot) || '.';
  app.use('/*', serveStatic({ root }));
  // The page routes by hash; any other path is the page too.
  app.get('*', serveStatic({ root, path: 'index.html' }));
  return app;
}

/** The pending holds of the namespace, listed at most once per INBOX_FRESH_MS for every open inbox. */
interface InboxListing {
  holds(): Promise<HoldView[]>;
  /** The next call lists again (a decision was sent). */
  stale(): void;
}

/**
 * One listing serves every open inbox for INBOX_FRESH_MS (a listing of 1,000 holds costs the
 * visibility store most of a second: bench/RESULTS.md); a decision makes it stale.
 */
function inboxListing(client: KeelClient): InboxListing {
  let inbox: { at: number; holds: Promise<HoldView[]> } | undefined;
  const stale = () => {
    inbox = undefined;
  };
  return {
    holds() {
      if (!inbox || Date.now() - inbox.at > INBOX_FRESH_MS) {
        const listing = client.holds();
        inbox = { at: Date.now(), holds: listing };
        listing.catch(() => inbox?.holds === listing && stale());
      }
      return inbox.holds;
    },
    stale,
  };
}

/** The routes that read: the page's info, the inbox, the runs, one run, a run's holds in full. */
function readingRoutes(app: Hono, { client, config, user, who, temporalUiUrl, inbox }: UiRoutes): void {
  const namespace = config.temporal.namespace;
  app.get('/api/info', (c) =>
    c.json({
      namespace,
      taskQueue: config.taskQueue,
      address: config.temporal.address,
      // Verified: the page shows who decides, and lets no other name be typed.
      ...(who.identities.has(c.req.raw) ? { user: who.identities.get(c.req.raw)!.subject, verified: true } : { user }),
      temporalUiUrl: temporalUiUrl ?? null,
      agents: agentNames(config),
    }),
  );

  // One listing for every inbox; each sees the holds of the runs it may read.
  app.get('/api/inbox', (c) =>
    answer(c, async () => {
      const access = who.access(c.req.raw);
      return { holds: (await inbox.holds()).filter((hold) => access.may('read', hold.principal ?? {})) };
    }),
  );

  app.get('/api/runs', async (c) => {
    const state = c.req.query('status');
    const parsedState = state ? RunLifecycleSchema.safeParse(state) : undefined;
    if (parsedState && !parsedState.success) return bad(c, `unknown status "${state}"; one of ${RunLifecycleSchema.options.join(', ')}`);
    const limit = Number(c.req.query('limit') ?? 50);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) return bad(c, 'limit: a whole number from 1 to 500');
    const agent = c.req.query('agent') || undefined;
    const since = c.req.query('since');
    const startedAfter = since ? new Date(since) : undefined;
    if (startedAfter && Number.isNaN(startedAfter.getTime())) return bad(c, `since: an ISO 8601 time, not "${since}"`);
    return answer(c, async () => {
      const options = {
        ...(agent ? { agent } : {}),
        ...(parsedState?.success ? { state: parsedState.data } : {}),
        ...(startedAfter ? { startedAfter } : {}),
        limit,
      };
      const runs = await listRuns(client.temporal, options, who.access(c.req.raw).readScope());
      // Waiting runs first, then newest first.
      runs.sort((a, b) => Number(b.state === 'waiting') - Number(a.state === 'waiting') || b.startedAt.localeCompare(a.startedAt));
      return { runs };
    });
  });

  app.get('/api/runs/:runId', (c) =>
    answer(c, async () => {
      const access = who.access(c.req.raw);
      await access.check(client.temporal, c.req.param('runId'), 'read');
      return runView(client, c.req.param('runId'), { temporalUiUrl, namespace, scope: access.readScope() });
    }),
  );

  // A run's pending holds in full (input, data, decision schema): what the inbox's forms are made from.
  // The status query needs a worker: one that does not answer in time leaves the card with the inbox's summary.
  app.get('/api/runs/:runId/holds', (c) =>
    answer(c, async () => {
      await who.access(c.req.raw).check(client.temporal, c.req.param('runId'), 'read');
      return { holds: await client.temporal.withDeadline(Date.now() + HOLDS_QUERY_MS, () => client.getHandle(c.req.param('runId')).pendingHolds()) };
    }),
  );
}

/** A run's events as server-sent events, from the hub's one watcher of the run, until it ends or the page goes. */
function runEventStream(c: Context, hub: EventHub, runId: string) {
  return streamSSE(c, async (stream) => {
    let id = 0;
    const queue: string[] = [];
    let wake: (() => void) | undefined;
    let ended = false;
    const stop = hub.listen(runId, (event) => {
      if (event === undefined) ended = true;
      // A page that reads slowly gets text coalesced by the page's refetch: keep at most 200 events queued.
      else if (queue.length < 200) queue.push(JSON.stringify(event));
      wake?.();
    });
    stream.onAbort(() => {
      ended = true;
      wake?.();
    });
    try {
      while (!stream.aborted) {
        while (queue.length) await stream.writeSSE({ data: queue.shift()!, event: 'run', id: String(++id) });
        if (ended) break;
        await Promise.race([new Promise<void>((resolve) => (wake = resolve)), stream.sleep(15_000)]);
        wake = undefined;
        if (!queue.length && !ended) await stream.writeSSE({ data: '{}', event: 'ping' });
      }
      if (!stream.aborted) await stream.writeSSE({ data: '{}', event: 'closed' });
    } finally {
      stop();
    }
  });
}

/** A decision from the page: who made it comes from the verified identity (or the name the page gives), never from what keel sets. */
function decisionRoute(app: Hono, { client, user, who, inbox }: UiRoutes, check: (c: Context, action: AccessAction) => Promise<unknown>): void {
  app.post('/api/runs/:runId/decisions', async (c) => {
    const body = await jsonBody(c);
    if (!body.ok) return bad(c, body.message);
    const { user: named, ...decision } = (body.value ?? {}) as { user?: unknown } & Record<string, unknown>;
    // Only a run sends a decision on as forwarded, and names itself: a person never claims it.
    if ('forwardedFrom' in decision || 'decidedBy' in decision)
      return bad(c, 'forwardedFrom and decidedBy are set by keel (decidedBy from user), not sent from the page');
    const verified = who.identities.get(c.req.raw);
    if (verified && named !== undefined) return bad(c, `decisions are recorded as your verified identity (${verified.subject}): send no user`);
    const name = named === undefined ? { success: true as const, data: user } : UserSchema.safeParse(named);
    if (!name.success) return bad(c, 'user: a name of 1 to 80 characters');
    if ('decidedByProof' in decision || 'decidedByGroups' in decision)
      return bad(c, 'decidedByProof and decidedByGroups are set by keel, not sent from the page');
    const parsed = parseDecision(decision);
    if (!parsed.success) return bad(c, parsed.error);
    const runId = c.req.param('runId');
    inbox.stale();
    try {
      await check(c, 'decide');
      return c.json(await client.getHandle(runId).decide(who.decider(c.req.raw, name.data)(runId, parsed.data), { timeoutMs: 15_000 }));
    } catch (error) {
      return failure(c, error);
    } finally {
      // A listing made while the decision was under way may still show its hold.
      inbox.stale();
    }
  });
}

/** The routes that change something: start a run (or a session's turn), decide a hold, steer, fork, abort. */
function changingRoutes(app: Hono, routes: UiRoutes): void {
  const { client, who } = routes;
  const check = (c: Context, action: AccessAction) => who.access(c.req.raw).check(client.temporal, c.req.param('runId')!, action);
  app.post('/api/runs', async (c) => {
    const body = await jsonBody(c);
    if (!body.ok) return bad(c, body.message);
    const parsed = StartSchema.safeParse(body.value);
    if (!parsed.success) return bad(c, `a run needs { agent, prompt, sessionId? }: ${describeZodError(parsed.error)}`);
    const { agent, prompt, sessionId } = parsed.data;
    return answer(c, async () => {
      const access = who.access(c.req.raw);
      // Whose run it is comes from the verified identity, never from the body.
      if (sessionId === undefined) return { runId: (await client.start(agent, prompt, { idPrefix: 'ui', ...access.principal })).runId };
      const ifBelongsTo = await access.session(client.temporal, agent, sessionId, 'steer');
      const turn = await client.session(agent, sessionId, access.principal).send(prompt, { detach: true, ...(ifBelongsTo ? { ifBelongsTo } : {}) });
      return { runId: turn.runId, sessionId };
    });
  });

  decisionRoute(app, routes, check);

  // A steering message from the page: { text, interrupt? }, checked by the run's validator (the page names no update id: each send is new).
  app.post('/api/runs/:runId/steer', async (c) => {
    const body = await jsonBody(c);
    if (!body.ok) return bad(c, body.message);
    const problem = steerInputProblem(body.value);
    if (problem) return bad(c, problem);
    const { text, interrupt } = SteerInputSchema.parse(body.value);
    return answer(c, async () => {
      await check(c, 'steer');
      return client.getHandle(c.req.param('runId')).steer(text, { ...(interrupt ? { interrupt } : {}) });
    });
  });

  // "Fork from here": a new run from the run's conversation up to a turn, checked by a worker first (nothing starts on bad input).
  app.post('/api/runs/:runId/fork', async (c) => {
    const body = await jsonBody(c);
    if (!body.ok) return bad(c, body.message);
    const parsed = ForkSchema.safeParse(body.value);
    if (!parsed.success) return bad(c, `a fork needs { at, message?, toolResults? }: ${describeZodError(parsed.error)}`);
    const { at, message, toolResults } = parsed.data;
    return answer(c, async () => {
      await check(c, 'fork');
      const { handle: _handle, ...started } = await client
        .getHandle(c.req.param('runId'))
        .fork({ at, ...(message !== undefined ? { message } : {}), ...(toolResults ? { toolResults } : {}) });
      return started;
    });
  });

  app.post('/api/runs/:runId/abort', (c) =>
    answer(c, async () => {
      await check(c, 'abort');
      await client.getHandle(c.req.param('runId')).cancel();
      return { aborted: true };
    }),
  );
}

/** The agents the config names (the worker's modules may register more; the page lets any name be typed). */
function agentNames(config: KeelConfig): string[] {
  return config.agents.map((agent) => agent.name).sort();
}

/** What the server serves to other agents, a line per protocol (`keel: MCP at <url> (<agents>)`). */
export function servedLines({ origin, mcpAgents, a2aAgents, chatAgents }: Pick<UiServer, 'origin' | 'mcpAgents' | 'a2aAgents' | 'chatAgents'>): string[] {
  return [
    ...(mcpAgents.length ? [`keel: MCP at ${origin}/mcp (${mcpAgents.join(', ')})`] : []),
    ...(a2aAgents.length ? [`keel: A2A at ${origin}/a2a/<agent> (${a2aAgents.join(', ')})`] : []),
    ...(chatAgents.length ? [`keel: AI SDK chat at ${origin}/api/chat/<agent> (${chatAgents.join(', ')})`] : []),
  ];
}

/** The default name of whoever decides from this UI. */
export function defaultUser(): string {
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    return `ui@${hostname()}`;
  }
}

/** Starts the UI server. */
export async function startUiServer({
  config,
  host = config.ui.host,
  port = config.ui.port,
  token = process.env.KEEL_UI_TOKEN || undefined,
  user = defaultUser(),
  webRoot = WEB_ROOT,
  exposeAll = false,
}: UiServerOptions): Promise<UiServer> {
  const guarded = {
    name: 'keel ui',
    token,
    tokenVariable: 'KEEL_UI_TOKEN',
    tokenCookie: TOKEN_COOKIE,
    changeHeader: 'x-keel-ui',
    openPaths: ['/mcp', '/a2a', '/api/chat', DECIDE_PATH],
    // A decision link is its own credential (signed, expiring, for one hold): whoever got it needs no UI token.
    tokenFreePaths: [DECIDE_PATH],
    identified: config.auth !== undefined,
    maxBodyBytes: MAX_BODY_BYTES,
    ...(config.serve.origins.length
      ? {
          crossOrigin: {
            origins: config.serve.origins.map((url) => new URL(url).origin),
            allowHeaders: ['content-type', 'authorization'],
            paths: ['/api/chat'],
          },
        }
      : {}),
  };
  assertListenable({ ...guarded, host });
  if (!existsSync(join(webRoot, 'index.html')))
    throw new KeelError('FAILED_PRECONDITION', `the UI's page is not built (${join(webRoot, 'index.html')} is missing): run npm run build:ui`);
  // The agents served at /mcp and /a2a.
  const serve = config.serve.agents.length ? config.serve : exposeAll && isLoopback(host) ? { ...config.serve, agents: ['*'] } : undefined;
  let agents: ExposedAgent[] = [];
  const problems: string[] = [];
  try {
    if (serve) agents = await loadExposedAgents(config, serve);
  } catch (error) {
    // Named in serve.agents, an agent that cannot be served is the config's mistake; exposing all is best effort.
    if (config.serve.agents.length) throw error;
    problems.push((error as Error).message);
  }
  // Each protocol whose SDK the project installed; named agents with neither is a mistake said at once.
  const servable = (check: () => void) => {
    if (!agents.length) return false;
    try {
      check();
      return true;
    } catch (error) {
      problems.push((error as Error).message);
      return false;
    }
  };
  // A chat is a session: the chat endpoint serves the exposed agents that keep one.
  const chatAgents = agents.filter((agent) => agent.session === 'server');
  const [overMcp, overA2A, overChat] = [servable(assertMcpServable), servable(assertA2AServable), chatAgents.length > 0 && servable(assertChatServable)];
  if (config.serve.agents.length && !overMcp && !overA2A && !overChat) throw new KeelError('FAILED_PRECONDITION', `serve.agents: ${problems.join('; ')}`);
  // A JWKS file that does not load is said before anything connects.
  const who = whoAsks(config);
  const client = await KeelClient.connect(config, { identity: `keel-ui ${process.pid}@${hostname()}` });
  const hub = new EventHub(client);
  const bound: { origin?: string } = {};
  const served = { client, agents, version: keelVersion() };
  const mcp = overMcp ? mcpHttpHandler({ ...served, uiOrigin: () => bound.origin }) : undefined;
  const a2a = overA2A ? a2aHttpHandler({ ...served, origin: () => bound.origin }) : undefined;
  const chat = overChat ? new ChatEndpoint(served) : undefined;
  const app = createUiApp({ client, config, hub, user, webRoot, mcp, a2a, chat, who });
  let server: GuardedServer;
  try {
    server = await startGuardedServer({ ...guarded, host, port, app });
  } catch (error) {
    // Off loopback without a token, a port another process holds (EADDRINUSE), an address this machine lacks: nothing is left open.
    hub.close();
    await client.close();
    throw error;
  }
  const origin = (bound.origin = server.origin);
  return {
    url: token !== undefined ? `${origin}/?token=${encodeURIComponent(token)}` : origin,
    origin,
    watched: () => hub.watched,
    mcpAgents: mcp ? agents.map((agent) => agent.name) : [],
    a2aAgents: a2a ? agents.map((agent) => agent.name) : [],
    chatAgents: chat ? chatAgents.map((agent) => agent.name) : [],
    ...(problems.length ? { serveProblem: problems.join('; ') } : {}),
    async close() {
      hub.close();
      await mcp?.close();
      await chat?.close();
      await server.close();
      await client.close();
    },
  };
}
