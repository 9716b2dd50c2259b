/**
 * keel agents as MCP tools (docs/mcp.md), served with the official MCP TypeScript SDK: each
 * agent `serve.agents` exposes is a tool taking a prompt (and, for an agent that keeps its
 * conversation on the server, a session id). A call starts a keel run and answers with the run's
 * answer (its structured output as `structuredContent` when the agent has an output schema); while
 * it runs, the run's events arrive as progress notifications when the client asked for them; a
 * cancelled request aborts the run. A hold asks the client (elicitation: approve or deny, with
 * the hold's question), records the decision with the client's name, and goes on; a client that
 * cannot be asked gets an answer saying the run waits and how to decide it. With the client's
 * opt-in a call is an MCP task, and the task is the run (RunTaskStore): read from Temporal, it
 * outlives the connection and this server. The run is durable behind the call: a worker that
 * dies mid-call costs the call nothing but time. Over stdio (`keel mcp`) and over Streamable HTTP
 * (`/mcp` of `keel ui`). Node side.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/index.js';
import type { CallToolResult, CreateTaskResult, ElicitResult, Task, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import type { KeelClient, RunHandle } from '../client/keel-client';
import type { RunEvent } from '../client/run-events';
import { KeelError, toKeelError } from '../core/errors';
import type { Hold, RunLifecycle, RunResult } from '../core/run';
import { runListing } from '../client/runs';
import { listRuns, type RunListing } from '../client/runs';
import { principalOfMemo, samePrincipal, type Principal } from '../core/principal';
import { OPEN_ACCESS, type Access } from '../security/access';
import { describeZodError } from '../core/schema-errors';
import { requireOptional } from '../node/require-ts';
import type { ExposedAgent } from './exposed-agents';

/** Loads a module of the MCP SDK (an optional peer dependency), saying how to install it when it is missing. */
const sdk = <T>(subpath: string): T => requireOptional<T>('@modelcontextprotocol/sdk', subpath, 'serving MCP');

/** Refuses (FAILED_PRECONDITION, saying how to install it) when the MCP SDK is not installed. */
export function assertMcpServable(): void {
  sdk('server/index.js');
}

/** A tool call's arguments. */
const ArgumentsSchema = z.object({ prompt: z.string().min(1), sessionId: z.string().min(1).optional() }).strict();

/** The tool of an agent. */
function toolOf(agent: ExposedAgent): McpTool {
  const properties: Record<string, object> = { prompt: { type: 'string', minLength: 1, description: `what to ask ${agent.name}` } };
  if (agent.session === 'server') properties.sessionId = { type: 'string', minLength: 1, description: 'the conversation this message continues' };
  return {
    name: agent.name,
    description: agent.description || `the keel agent ${agent.name}`,
    inputSchema: { type: 'object', properties, required: agent.session === 'server' ? ['prompt', 'sessionId'] : ['prompt'], additionalProperties: false },
    // A call may run as a task (answered at once, the run polled): the client chooses.
    execution: { taskSupport: 'optional' },
    ...(agent.output ? { outputSchema: agent.output as McpTool['outputSchema'] } : {}),
  };
}

/** What serving MCP needs. */
export interface McpServeOptions {
  client: KeelClient;
  agents: readonly ExposedAgent[];
  /** Where a person decides a hold the client cannot be asked about (the UI's address), once known. */
  uiOrigin?: () => string | undefined;
  /** keel's version, as the server tells clients. */
  version: string;
  /** What the identity this server answers may do (docs/tenants.md; default: everything, no `auth:`). */
  access?: Access;
}

/** A result that says what went wrong, as a tool error the model (or person) reading it sees. */
const toolError = (text: string, runId?: string): CallToolResult => ({
  isError: true,
  content: [{ type: 'text', text }],
  ...(runId ? { _meta: { 'keel/runId': runId } } : {}),
});

/** One line of progress for a run event, or undefined for one not worth a notification. */
function progressLine(event: RunEvent): string | undefined {
  switch (event.type) {
    case 'toolCall':
      return `calling ${event.name}`;
    case 'toolResult':
      return `${event.name} answered`;
    case 'hold':
      return `waiting for a decision: ${event.interrupt.question ?? event.interrupt.message ?? event.interrupt.toolName ?? event.interrupt.kind}`;
    case 'task':
      return `background task ${event.task.name ?? event.task.agent}: ${event.task.status}`;
    default:
      return undefined;
  }
}

/** The form a hold's decision is asked with: approve or deny, and why. */
const DECISION_FORM = {
  type: 'object' as const,
  properties: {
    approved: { type: 'boolean' as const, title: 'Approve', description: 'approve (true) or deny (false) the held call' },
    reason: { type: 'string' as const, title: 'Reason', description: 'why (recorded with the decision)' },
  },
  required: ['approved'],
};

/** The answer of a call whose run waits for a decision the client cannot be asked for. */
function waitingResult(runId: string, hold: Hold, agent: ExposedAgent, uiOrigin: string | undefined): CallToolResult {
  const waiting = { interruptId: hold.id, kind: hold.kind, ...(hold.toolName ? { toolName: hold.toolName } : {}) };
  const where = [uiOrigin ? `in keel's UI (${uiOrigin}/#/runs/${encodeURIComponent(runId)})` : undefined, `with \`keel approve ${runId} ${hold.id}\` (or deny)`]
    .filter(Boolean)
    .join(' or ');
  return {
    content: [
      {
        type: 'text',
        text: `run ${runId} waits for a decision: ${hold.question ?? hold.message ?? `the held call of ${hold.toolName ?? hold.kind}`}. Decide it ${where}.`,
      },
    ],
    // A tool with an output schema answers in its shape or as an error (clients check it): waiting is then an error, its hold in _meta.
    ...(agent.output ? { isError: true } : { structuredContent: { runId, waiting } }),
    _meta: { 'keel/runId': runId, 'keel/waiting': waiting },
  };
}

/** The tool call's answer from a run's result. */
function answerOf(runId: string, result: RunResult, agent: ExposedAgent): CallToolResult {
  return {
    content: [{ type: 'text', text: agent.output && result.output !== undefined ? JSON.stringify(result.output) : result.text }],
    ...(agent.output && result.output !== undefined ? { structuredContent: result.output as Record<string, unknown> } : {}),
    _meta: { 'keel/runId': runId },
  };
}

/** How a hold is asked about: its question, as one line. */
const questionOf = (agent: string, runId: string, hold: Pick<Hold, 'question' | 'message' | 'toolName'>) =>
  `${agent} (run ${runId}) asks: ${hold.question ?? hold.message ?? `may ${hold.toolName ?? 'the held call'} run?`}`;

/** An elicitation's answer as a decision (undefined: the client would not say). */
function decisionOf(answer: ElicitResult): { approved: boolean; reason?: string } | undefined {
  if (answer.action !== 'accept') return answer.action === 'decline' ? { approved: false, reason: 'declined' } : undefined;
  const content = answer.content ?? {};
  return { approved: content.approved === true, ...(typeof content.reason === 'string' && content.reason ? { reason: content.reason } : {}) };
}

/** A task's status from the run's lifecycle. */
const TASK_STATUS: Record<RunLifecycle, Task['status']> = {
  running: 'working',
  waiting: 'input_required',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  terminated: 'failed',
  timed_out: 'failed',
};

/** How often a client is told to look at a task again (answered from the server's last read of the run). */
const TASK_POLL_MS = 50;
/** How long a read of a task's run answers for it (its end is seen at once: the server waits for it). */
const READ_FRESH_MS = 500;
/** The most task reads kept, and runs whose end is waited for, by one server. */
const MAX_READS = 1000;
const MAX_WATCHED = 200;

/**
 * MCP tasks that are keel runs: the task id is the run id, and every answer is read from
 * Temporal, so a task outlives the connection and the keel server that created it. Only runs of
 * the exposed agents are tasks here. A run that waits for a decision is `input_required`; the
 * store then asks the client (through `ask`, queued for `tasks/result`) about each hold once
 * per server.
 */
class RunTaskStore implements TaskStore {
  /** Holds this server has asked about (by run and hold id). */
  private readonly asked = new Set<string>();
  /** Tasks this server was asked to cancel: cancelled from then on, while their runs wind down. */
  private readonly cancelled = new Set<string>();
  /** The latest read of each task's run, kept briefly: a client polling a task is answered from it. */
  private readonly reads = new Map<string, { at: number; found: Promise<{ run: RunListing; agent: ExposedAgent } | undefined> }>();
  /** Runs whose end this server waits for (Temporal's long poll), so their tasks turn terminal at once. */
  private readonly watching = new Set<string>();
  /** The latest read of each waiting run's holds. */
  private readonly holdReads = new Map<string, { at: number; holds: Promise<Hold[]> }>();
  /** The results of watched runs that completed (their tasks' answers, with no further read). */
  private readonly results = new Map<string, RunResult>();

  constructor(
    private readonly client: KeelClient,
    private readonly agents: ReadonlyMap<string, ExposedAgent>,
    private readonly ask: ((runId: string, agent: ExposedAgent, hold: Hold) => void) | undefined,
    private readonly access: Access,
  ) {}

  /** The run's listing, if it is a run of an exposed agent: read again once the last read is READ_FRESH_MS old, or the run ended. */
  private listing(runId: string): Promise<{ run: RunListing; agent: ExposedAgent } | undefined> {
    const cached = this.reads.get(runId);
    // A watched run that completed: its last read, completed now.
    if (cached && this.results.has(runId))
      return cached.found.then(
        (found) => found && { ...found, run: { ...found.run, state: 'completed', endedAt: found.run.endedAt ?? new Date().toISOString() } },
      );
    if (cached && Date.now() - cached.at < READ_FRESH_MS) return cached.found;
    const found = this.client
      .getHandle(runId)
      .describe()
      .then((description) => {
        // A run this identity may not read is no task of its own: it answers as one that does not exist.
        if (!this.access.may('read', principalOfMemo(description.memo))) return undefined;
        const run = runListing(description);
        const agent = run.agent === undefined ? undefined : this.agents.get(run.agent);
        if (agent && (run.state === 'running' || run.state === 'waiting')) this.watch(runId);
        return agent ? { run, agent } : undefined;
      })
      .catch(() => undefined);
    if (this.reads.size >= MAX_READS) this.reads.delete(this.reads.keys().next().value!);
    this.reads.set(runId, { at: Date.now(), found });
    return found;
  }

  /** Waits for the run's end (a few hundred at once at most); when it comes, its next read is fresh. */
  private watch(runId: string): void {
    if (this.watching.has(runId) || this.watching.size >= MAX_WATCHED) return;
    this.watching.add(runId);
    void this.client
      .getHandle(runId)
      .result()
      .then(
        (result) => {
          if (this.results.size >= MAX_READS) this.results.delete(this.results.keys().next().value!);
          this.results.set(runId, result);
        },
        // Any other end is read afresh.
        () => this.reads.delete(runId),
      )
      .finally(() => this.watching.delete(runId));
  }

  private taskOf(run: RunListing, statusMessage?: string): Task {
    const open = run.state === 'running' || run.state === 'waiting';
    return {
      taskId: run.runId,
      status: open && this.cancelled.has(run.runId) ? 'cancelled' : TASK_STATUS[run.state],
      // A run lives as long as Temporal keeps it (the namespace's retention once it ended).
      ttl: null,
      createdAt: run.startedAt,
      lastUpdatedAt: run.endedAt ?? new Date().toISOString(),
      pollInterval: TASK_POLL_MS,
      ...(statusMessage ? { statusMessage } : {}),
    };
  }

  async createTask(options: CreateTaskOptions): Promise<Task> {
    const runId = options.context?.runId;
    if (typeof runId !== 'string') throw new KeelError('INTERNAL', 'a task is created for a run that has started');
    const found = await this.listing(runId);
    if (!found) throw new KeelError('NOT_FOUND', `run ${runId} is not a run of an exposed agent`);
    return this.taskOf(found.run);
  }

  async getTask(taskId: string): Promise<Task | null> {
    const found = await this.listing(taskId);
    if (!found) return null;
    if (found.run.state !== 'waiting' || this.cancelled.has(taskId)) return this.taskOf(found.run);
    const holds = await this.pendingHolds(taskId);
    for (const hold of holds) {
      const key = `${taskId}/${hold.id}`;
      if (this.ask && !this.asked.has(key)) {
        this.asked.add(key);
        this.ask(taskId, found.agent, hold);
      }
    }
    return this.taskOf(found.run, holds[0] ? questionOf(found.agent.name, taskId, holds[0]) : undefined);
  }

  /**
   * A waiting run's holds (a query), asked at most once per READ_FRESH_MS and never twice at once
   * for one run: a client polling `tasks/get` beside a `tasks/result` shares the answer.
   */
  private pendingHolds(runId: string): Promise<Hold[]> {
    const cached = this.holdReads.get(runId);
    if (cached && Date.now() - cached.at < READ_FRESH_MS) return cached.holds;
    const holds = this.client
      .getHandle(runId)
      .pendingHolds()
      .catch(() => []);
    if (this.holdReads.size >= MAX_READS) this.holdReads.delete(this.holdReads.keys().next().value!);
    this.holdReads.set(runId, { at: Date.now(), holds });
    return holds;
  }

  async storeTaskResult(): Promise<void> {
    // The run keeps its result.
  }

  async getTaskResult(taskId: string): Promise<CallToolResult> {
    const found = await this.listing(taskId);
    if (!found) throw new KeelError('NOT_FOUND', `no task ${taskId}`);
    try {
      return answerOf(taskId, this.results.get(taskId) ?? (await this.client.getHandle(taskId).result()), found.agent);
    } catch (error) {
      const failure = toKeelError(error);
      return toolError(`run ${taskId} of ${found.agent.name} ended ${found.run.state}: ${failure.status}: ${failure.message}`, taskId);
    }
  }

  async updateTaskStatus(taskId: string, status: Task['status']): Promise<void> {
    // Only a cancellation changes the run; the run itself says when it waits or ends.
    if (status !== 'cancelled') return;
    await this.access.check(this.client.temporal, taskId, 'abort');
    await this.client.getHandle(taskId).cancel();
    this.cancelled.add(taskId);
    this.reads.delete(taskId);
    this.holdReads.delete(taskId);
  }

  async listTasks(): Promise<{ tasks: Task[] }> {
    const scope = this.access.readScope();
    const runs = (await Promise.all([...this.agents.keys()].map((agent) => listRuns(this.client.temporal, { agent, limit: 100 }, scope)))).flat();
    runs.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
    return { tasks: runs.slice(0, 100).map((run) => this.taskOf(run)) };
  }
}

/**
 * Starts the run a tool call asks for (a session's turn, for a session agent), as the caller:
 * bad arguments are `invalid(message)`, thrown; a refusal to start is the tool's error.
 */
async function startRun(
  client: KeelClient,
  agent: ExposedAgent,
  args: unknown,
  access: McpServeOptions['access'] & object,
  invalid: (message: string) => Error,
): Promise<{ runId: string; belongsTo: Principal } | { error: string }> {
  const parsed = ArgumentsSchema.safeParse(args ?? {});
  if (!parsed.success) throw invalid(`arguments of ${agent.name}: ${describeZodError(parsed.error)}`);
  const { prompt, sessionId } = parsed.data;
  if (agent.session === 'server' && sessionId === undefined) throw invalid(`arguments of ${agent.name}: sessionId is required`);
  if (agent.session === 'client' && sessionId !== undefined)
    throw invalid(`arguments of ${agent.name}: this agent keeps no session on the server; send no sessionId`);
  try {
    // Whose run it is comes from the verified identity, never from the arguments.
    if (sessionId === undefined)
      return { runId: (await client.start(agent.name, prompt, { idPrefix: 'mcp', ...access.principal })).runId, belongsTo: access.principal };
    // Whom the run belongs to: the caller, or the session's owner it may steer.
    const ifBelongsTo = await access.session(client.temporal, agent.name, sessionId, 'steer');
    const turn = await client.session(agent.name, sessionId, access.principal).send(prompt, { detach: true, ...(ifBelongsTo ? { ifBelongsTo } : {}) });
    return { runId: turn.runId, belongsTo: ifBelongsTo ?? access.principal };
  } catch (error) {
    return { error: toKeelError(error).message };
  }
}

/** An MCP server (the SDK's) whose tools are `agents`. */
// eslint-disable-next-line @typescript-eslint/no-deprecated -- see below
export function createMcpServer({ client, agents, uiOrigin, version, access = OPEN_ACCESS }: McpServeOptions): Server {
  // The SDK's low-level server: its high-level McpServer takes tool schemas as zod, keel's are JSON Schema already.
  // eslint-disable-next-line @typescript-eslint/no-deprecated
  const { Server } = sdk<typeof import('@modelcontextprotocol/sdk/server/index.js')>('server/index.js');
  const { CallToolRequestSchema, ListToolsRequestSchema, ErrorCode, McpError } = sdk<typeof import('@modelcontextprotocol/sdk/types.js')>('types.js');
  const { InMemoryTaskMessageQueue } = sdk<typeof import('@modelcontextprotocol/sdk/experimental/tasks/index.js')>('experimental/tasks/index.js');
  const byName = new Map(agents.map((agent) => [agent.name, agent]));
  const decidedBy = () => `mcp:${server.getClientVersion()?.name ?? 'client'}`;
  const canAsk = () => !!server.getClientCapabilities()?.elicitation;
  // A task's hold is asked about through tasks/result (the SDK queues the question for it).
  const askInTask = (runId: string, agent: ExposedAgent, hold: Hold) => {
    if (!canAsk()) return;
    void server
      .elicitInput({ mode: 'form', message: questionOf(agent.name, runId, hold), requestedSchema: DECISION_FORM }, { relatedTask: { taskId: runId } })
      .then(async (answer) => {
        const decision = decisionOf(answer);
        if (!decision) return;
        await access.check(client.temporal, runId, 'decide');
        await client.getHandle(runId).decide({ interruptId: hold.id, ...decision, decidedBy: decidedBy() });
      })
      .catch(() => undefined);
  };
  const server = new Server(
    { name: 'keel', version },
    {
      capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: new RunTaskStore(client, byName, askInTask, access),
      taskMessageQueue: new InMemoryTaskMessageQueue(),
    },
  );

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: agents.map(toolOf) }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult | CreateTaskResult> => {
    const agent = byName.get(request.params.name);
    if (!agent) throw new McpError(ErrorCode.InvalidParams, `no tool "${request.params.name}"; tools: ${[...byName.keys()].join(', ') || '(none)'}`);
    const started = await startRun(client, agent, request.params.arguments, access, (message) => new McpError(ErrorCode.InvalidParams, message));
    if ('error' in started) return toolError(started.error);
    const { runId, belongsTo } = started;
    // With the client's opt-in, the call answers at once with a task: the run.
    if (request.params.task && extra.taskStore) return { task: await extra.taskStore.createTask({ ttl: request.params.task.ttl ?? null, context: { runId } }) };
    return followRun({
      handle: client.getHandle(runId),
      agent,
      signal: extra.signal,
      following: extra._meta?.progressToken !== undefined,
      progress: (progress, message) => {
        const progressToken = extra._meta?.progressToken;
        if (progressToken === undefined) return;
        void extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, message } }).catch(() => undefined);
      },
      ask:
        canAsk() && access.may('decide', belongsTo)
          ? async (hold, asking) =>
              decisionOf(
                await server.elicitInput(
                  { mode: 'form', message: questionOf(agent.name, runId, hold), requestedSchema: DECISION_FORM },
                  { relatedRequestId: extra.requestId, signal: asking },
                ),
              )
          : undefined,
      decidedBy: decidedBy(),
      uiOrigin: uiOrigin?.(),
    });
  });
  return server;
}

/** How long an answer waits for the run's last events to be said as progress. */
const EVENTS_DRAIN_MS = 2000;

/** What following one run needs. */
interface FollowOptions {
  handle: RunHandle;
  agent: ExposedAgent;
  signal: AbortSignal;
  progress: (progress: number, message: string) => void;
  /** The client asked for progress (its answer then waits, briefly, for the run's last events). */
  following: boolean;
  /** Asks the client to decide a hold, until `signal` (undefined: it cannot be asked; undefined answer: it would not say). */
  ask: ((hold: Hold, signal: AbortSignal) => Promise<{ approved: boolean; reason?: string } | undefined>) | undefined;
  decidedBy: string;
  uiOrigin: string | undefined;
}

/** Follows a run to its answer: progress from its events, holds asked about, the call cancelled → the run aborted. */
async function followRun({ handle, agent, signal, progress, following, ask, decidedBy, uiOrigin }: FollowOptions): Promise<CallToolResult> {
  const { runId } = handle;
  const stop = new AbortController();
  const aborted = () => {
    stop.abort();
    handle.cancel().catch(() => undefined);
  };
  if (signal.aborted) aborted();
  else signal.addEventListener('abort', aborted, { once: true });
  const asked = new Set<string>();
  let steps = 0;
  // Holds end the wait early when the client cannot be asked; otherwise the result does.
  let loop: Promise<void> = Promise.resolve();
  const waiting = new Promise<CallToolResult | undefined>((resolve) => {
    loop = (async () => {
      try {
        for await (const event of handle.events({ signal: stop.signal })) {
          const line = progressLine(event);
          if (line) progress(++steps, line);
          if (event.type !== 'hold' || asked.has(event.interrupt.id)) continue;
          asked.add(event.interrupt.id);
          const hold = event.interrupt;
          if (!ask) return resolve(waitingResult(runId, hold, agent, uiOrigin));
          const decision = await ask(hold, stop.signal).catch(() => undefined);
          if (!decision) return resolve(waitingResult(runId, hold, agent, uiOrigin));
          await handle.decide({ interruptId: hold.id, ...decision, decidedBy }).catch((error: unknown) => {
            progress(++steps, `the decision was not taken: ${toKeelError(error).message}`);
          });
        }
      } catch {
        // The events stop with the call; the result says how the run ended.
      }
      resolve(undefined);
    })();
  });
  try {
    const outcome = await Promise.race([
      handle.result({ signal: stop.signal }).then((result) => answerOf(runId, result, agent)),
      waiting.then((early) => early ?? new Promise<never>(() => undefined)),
    ]);
    // The events end with the run's end: for a client that follows progress, let the last of them be said first (briefly: they are polled).
    if (following) await Promise.race([waiting, new Promise((resolve) => setTimeout(resolve, EVENTS_DRAIN_MS).unref())]);
    return outcome;
  } catch (error) {
    if (signal.aborted) return toolError(`the call was cancelled; run ${runId} was asked to stop`, runId);
    const failure = toKeelError(error);
    return toolError(`run ${runId} of ${agent.name} failed: ${failure.status}: ${failure.message}`, runId);
  } finally {
    stop.abort();
    signal.removeEventListener('abort', aborted);
    // Its last query answered before the call's: two queries at once on a run that has just ended
    // can leave one unanswered for the server's whole query timeout (30 s) on a busy machine.
    await loop;
  }
}

/** The most MCP sessions one server keeps over HTTP; the oldest is closed to make room. */
const MAX_SESSIONS = 1000;

/** Serves MCP over Streamable HTTP: one SDK transport and server per MCP session, by its `mcp-session-id`. */
export function mcpHttpHandler(options: McpServeOptions): {
  handle: (request: Request, access?: Access) => Promise<Response>;
  close: () => Promise<void>;
} {
  const { WebStandardStreamableHTTPServerTransport: Transport } =
    sdk<typeof import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js')>('server/webStandardStreamableHttp.js');
  // Each MCP session answers the identity that opened it: another's request with its id finds no session.
  const sessions = new Map<string, { transport: WebStandardStreamableHTTPServerTransport; access: Access }>();
  const forget = async (id: string) => {
    const session = sessions.get(id);
    sessions.delete(id);
    await session?.transport.close();
  };
  return {
    async handle(request, access = OPEN_ACCESS) {
      const id = request.headers.get('mcp-session-id');
      const known = id ? sessions.get(id) : undefined;
      if (known && samePrincipal(known.access.principal, access.principal)) return known.transport.handleRequest(request);
      if (id)
        return Response.json(
          { jsonrpc: '2.0', error: { code: -32001, message: `no MCP session "${id}" here (it ended, or this server restarted): initialize again` }, id: null },
          { status: 404 },
        );
      const transport: WebStandardStreamableHTTPServerTransport = new Transport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => {
          if (sessions.size >= MAX_SESSIONS) void forget(sessions.keys().next().value!);
          sessions.set(sessionId, { transport, access });
        },
        onsessionclosed: (sessionId) => void forget(sessionId),
      });
      await createMcpServer({ ...options, access }).connect(transport);
      return transport.handleRequest(request);
    },
    async close() {
      await Promise.all([...sessions.keys()].map((id) => forget(id)));
    },
  };
}

/** `keel mcp`: the same server over stdio, until the client closes it. */
export async function serveMcpStdio(options: McpServeOptions): Promise<void> {
  const { StdioServerTransport } = sdk<typeof import('@modelcontextprotocol/sdk/server/stdio.js')>('server/stdio.js');
  const server = createMcpServer(options);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
  await server.connect(transport);
  await closed;
}
