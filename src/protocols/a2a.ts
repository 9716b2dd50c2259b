/**
 * keel agents as A2A agents (docs/a2a.md), with the official A2A JavaScript SDK's JSON-RPC
 * transport: each agent `serve.agents` exposes has an agent card at
 * `/a2a/<agent>/.well-known/agent-card.json` and its endpoint at `/a2a/<agent>`. A task is a keel
 * run (its id is the run id), read from Temporal on every request, so it outlives the connection
 * and the keel server. `SendMessage` starts a run (blocking until it ends or waits, unless the
 * client asks to return at once), `SendStreamingMessage` streams its events as task status and
 * artifact updates, `GetTask`, `ListTasks`, `CancelTask` and `SubscribeToTask` read and abort it
 * (v0.3 clients' `message/send`, `tasks/get`, ... too). The context id of an agent with
 * `session: 'server'` is its session; a hold puts the task in `input-required` with the question,
 * and the next message for the task with a data part (`{ "approved": true }`, or what the hold's
 * decision takes) decides it. Node side.
 */
import { randomUUID } from 'node:crypto';
import type { AgentCard, Message, Part, StreamResponse, Task, TaskState } from '@a2a-js/sdk';
import type { A2ARequestHandler, ServerCallContext, User } from '@a2a-js/sdk/server';
import type { KeelClient } from '../client/keel-client';
import { runListing, type RunListing } from '../client/runs';
import { KeelError, toKeelError } from '../core/errors';
import { parseDecision } from '../core/holds';
import type { Hold, RunLifecycle } from '../core/run';
import { sessionOfRun } from '../core/session';
import { requireOptional } from '../node/require-ts';
import { principalOfMemo } from '../core/principal';
import { listRuns } from '../client/runs';
import { OPEN_ACCESS, type Access, type AccessAction } from '../security/access';
import type { ExposedAgent } from './exposed-agents';

/** Loads a module of the A2A SDK (an optional peer dependency), saying how to install it when it is missing. */
const sdk = <T>(subpath: string): T => requireOptional<T>('@a2a-js/sdk', subpath, 'serving A2A');

type Root = typeof import('@a2a-js/sdk');
type Errors = typeof import('@a2a-js/sdk/errors');

/** What serving A2A needs. */
export interface A2AServeOptions {
  client: KeelClient;
  agents: readonly ExposedAgent[];
  version: string;
  /** The server's address, once it listens (an agent card names its endpoint). */
  origin: () => string | undefined;
}

/** Refuses (FAILED_PRECONDITION, saying how to install it) when the A2A SDK is not installed. */
export function assertA2AServable(): void {
  sdk('server');
}

/** The task state of a run's lifecycle. */
function stateOf(root: Root, lifecycle: RunLifecycle): TaskState {
  const { TaskState } = root;
  const states: Record<RunLifecycle, TaskState> = {
    running: TaskState.TASK_STATE_WORKING,
    waiting: TaskState.TASK_STATE_INPUT_REQUIRED,
    completed: TaskState.TASK_STATE_COMPLETED,
    failed: TaskState.TASK_STATE_FAILED,
    cancelled: TaskState.TASK_STATE_CANCELED,
    terminated: TaskState.TASK_STATE_FAILED,
    timed_out: TaskState.TASK_STATE_FAILED,
  };
  return states[lifecycle];
}

const textPart = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const dataPart = (value: unknown): Part => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });

/** The agent card of `agent`, as JSON (what `.well-known/agent-card.json` answers). */
export function agentCardJson(agent: ExposedAgent, endpoint: string, version: string): Record<string, unknown> {
  return {
    name: agent.name,
    description: agent.description || `the keel agent ${agent.name}`,
    supportedInterfaces: [{ url: endpoint, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    version,
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: agent.output ? ['application/json', 'text/plain'] : ['text/plain'],
    skills: [
      {
        id: agent.name,
        name: agent.name,
        description: agent.description || `the keel agent ${agent.name}`,
        tags: ['keel', ...(agent.session === 'server' ? ['session'] : [])],
      },
    ],
  };
}

/** Who asks, as the A2A SDK hands it to each call: keel's access for the verified identity (none verified: the one local user). */
class VerifiedUser implements User {
  constructor(readonly access: Access) {}
  get isAuthenticated(): boolean {
    return this.access.principal.owner !== undefined;
  }
  get userName(): string {
    return this.access.principal.owner ?? 'client';
  }
}

/** The access of the call's user (a context keel did not make answers as the one local user). */
function accessIn(context: ServerCallContext | undefined): Access {
  return context?.user instanceof VerifiedUser ? context.user.access : OPEN_ACCESS;
}

/** An agent's A2A request handler: every task is a run of the agent. */
class RunTasks implements A2ARequestHandler {
  private readonly root = sdk<Root>('');
  private readonly errors = sdk<Errors>('errors');

  constructor(
    private readonly client: KeelClient,
    private readonly agent: ExposedAgent,
    private readonly card: () => AgentCard,
  ) {}

  getAgentCard(): Promise<AgentCard> {
    return Promise.resolve(this.card());
  }

  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new this.errors.ExtendedAgentCardNotConfiguredError('keel serves no extended agent card');
  }

  async sendMessage(params: Parameters<A2ARequestHandler['sendMessage']>[0], context: ServerCallContext): Promise<Task> {
    const runId = await this.begin(params.message, context);
    if (!params.configuration?.returnImmediately) await this.settled(runId);
    return this.task(runId, accessIn(context));
  }

  async *sendMessageStream(params: Parameters<A2ARequestHandler['sendMessageStream']>[0], context: ServerCallContext): AsyncGenerator<StreamResponse> {
    const runId = await this.begin(params.message, context);
    yield { payload: { $case: 'task', value: await this.task(runId, accessIn(context)) } };
    yield* this.follow(runId, accessIn(context));
  }

  async *resubscribe(params: Parameters<A2ARequestHandler['resubscribe']>[0], context: ServerCallContext): AsyncGenerator<StreamResponse> {
    const task = await this.task(params.id, accessIn(context));
    yield { payload: { $case: 'task', value: task } };
    if (task.status?.state === this.root.TaskState.TASK_STATE_WORKING) yield* this.follow(params.id, accessIn(context));
  }

  async getTask(params: Parameters<A2ARequestHandler['getTask']>[0], context: ServerCallContext): Promise<Task> {
    return this.task(params.id, accessIn(context));
  }

  async cancelTask(params: Parameters<A2ARequestHandler['cancelTask']>[0], context: ServerCallContext): Promise<Task> {
    const access = accessIn(context);
    const run = await this.listing(params.id, access, 'abort');
    if (run.state !== 'running' && run.state !== 'waiting') throw new this.errors.TaskNotCancelableError(`task ${params.id} has ended (${run.state})`);
    await this.client.getHandle(params.id).cancel();
    const task = await this.task(params.id, access);
    // The run winds down on its worker: the task is cancelled from now on.
    return { ...task, status: { state: this.root.TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() } };
  }

  async listTasks(
    params: Parameters<A2ARequestHandler['listTasks']>[0],
    context: ServerCallContext,
  ): Promise<Awaited<ReturnType<A2ARequestHandler['listTasks']>>> {
    const pageSize = Math.min(params.pageSize || 50, 100);
    const access = accessIn(context);
    // The A2A request's own tenant (a path or metadata field the client sets) is not who asks: the verified identity's scope is.
    const runs = await listRuns(this.client.temporal, { agent: this.agent.name, limit: pageSize }, access.readScope());
    const tasks = await Promise.all(
      runs.filter((run) => !params.contextId || this.contextOf(run.runId) === params.contextId).map((run) => this.task(run.runId, access)),
    );
    return { tasks, nextPageToken: '', pageSize, totalSize: tasks.length };
  }

  createTaskPushNotificationConfig(): never {
    throw new this.errors.PushNotificationNotSupportedError('keel sends no push notifications: stream the task, or ask for it');
  }
  getTaskPushNotificationConfig(): never {
    return this.createTaskPushNotificationConfig();
  }
  listTaskPushNotificationConfigs(): never {
    return this.createTaskPushNotificationConfig();
  }
  deleteTaskPushNotificationConfig(): never {
    return this.createTaskPushNotificationConfig();
  }

  /** Until the run ends (its result, the moment Temporal has it) or waits for a decision (its events say so). */
  private async settled(runId: string): Promise<void> {
    const handle = this.client.getHandle(runId);
    const stop = new AbortController();
    const loop = (async () => {
      for await (const event of handle.events({ signal: stop.signal })) if (event.type === 'hold') return true;
      return false;
    })().catch(() => false);
    try {
      // Events that end without a hold: the result says the rest.
      await Promise.race([handle.result({ signal: stop.signal }).catch(() => undefined), loop.then((held) => held || new Promise<never>(() => undefined))]);
    } finally {
      stop.abort();
      // Its last query answered before the task is read: two queries at once on a run that has just
      // ended can leave one unanswered for the server's whole query timeout (30 s) on a busy machine.
      await loop;
    }
  }

  /** The context of a run: its session for a session agent, else the run itself. */
  private contextOf(runId: string): string {
    return this.agent.session === 'server' ? (sessionOfRun(runId, this.agent.name)?.sessionId ?? runId) : runId;
  }

  /** The run of a task, if it is a run of this agent that `access` may do `action` to (else, as for no run, TaskNotFoundError). */
  private async listing(runId: string, access: Access, action: AccessAction = 'read'): Promise<RunListing> {
    let run: RunListing | undefined;
    try {
      const description = await this.client.getHandle(runId).describe();
      run = access.may(action, principalOfMemo(description.memo)) ? runListing(description) : undefined;
    } catch {
      run = undefined;
    }
    if (!run || run.agent !== this.agent.name) throw new this.errors.TaskNotFoundError(`no task ${runId} of agent ${this.agent.name}`);
    return run;
  }

  /** Starts the run a message asks for, or decides the hold of the task it answers; returns the run id. */
  private async begin(message: Message | undefined, context: ServerCallContext): Promise<string> {
    if (!message) throw new this.errors.RequestMalformedError('a message is required');
    const text = message.parts.flatMap((part) => (part.content?.$case === 'text' ? [part.content.value] : [])).join('\n');
    const data = message.parts.find((part) => part.content?.$case === 'data')?.content?.value as unknown;
    if (message.taskId) return this.answer(message.taskId, data, context);
    if (!text) throw new this.errors.RequestMalformedError('the message has no text part: send the prompt as text');
    const access = accessIn(context);
    try {
      if (this.agent.session === 'server') {
        // Another's context answers as one that does not exist; a new one belongs to who sends.
        const contextId = message.contextId || randomUUID();
        const ifBelongsTo = await access.session(this.client.temporal, this.agent.name, contextId, 'steer');
        return (await this.client.session(this.agent.name, contextId, access.principal).send(text, { detach: true, ...(ifBelongsTo ? { ifBelongsTo } : {}) }))
          .runId;
      }
      if (message.contextId)
        throw new this.errors.RequestMalformedError(
          `agent ${this.agent.name} keeps no conversation between tasks: send no contextId (each task is its own context)`,
        );
      // Whose run it is comes from the verified identity, never from the message or its metadata.
      return (await this.client.start(this.agent.name, text, { idPrefix: 'a2a', ...access.principal })).runId;
    } catch (error) {
      if (!KeelError.isInstance(error)) throw error;
      throw new this.errors.RequestMalformedError(error.message);
    }
  }

  /** Decides the hold a waiting task asks about, with the message's data part. */
  private async answer(taskId: string, data: unknown, context: ServerCallContext): Promise<string> {
    const run = await this.listing(taskId, accessIn(context), 'decide');
    if (run.state !== 'waiting')
      throw new this.errors.RequestMalformedError(`task ${taskId} is ${run.state}, not waiting for input: send a new message without taskId`);
    const handle = this.client.getHandle(taskId);
    const [hold] = await handle.pendingHolds();
    if (!hold) throw new this.errors.RequestMalformedError(`task ${taskId} has no hold waiting any more`);
    if (typeof data !== 'object' || data === null || Array.isArray(data))
      throw new this.errors.RequestMalformedError(
        `task ${taskId} waits for a decision: send a data part such as { "approved": true } (or { "approved": false, "reason": "..." })`,
      );
    const who = context.user?.isAuthenticated ? context.user.userName : 'client';
    const parsed = parseDecision({ interruptId: hold.id, ...(data as Record<string, unknown>), decidedBy: `a2a:${who}` });
    if (!parsed.success) throw new this.errors.RequestMalformedError(parsed.error);
    try {
      await handle.decide(parsed.data);
    } catch (error) {
      throw new this.errors.RequestMalformedError(toKeelError(error).message);
    }
    return taskId;
  }

  private message(taskId: string, parts: Part[]): Message {
    const { Role } = this.root;
    return {
      messageId: randomUUID(),
      contextId: this.contextOf(taskId),
      taskId,
      role: Role.ROLE_AGENT,
      parts,
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };
  }

  /** What a waiting run asks, as the status message of its task. */
  private holdMessage(taskId: string, hold: Hold): Message {
    const question = hold.question ?? hold.message ?? `may ${hold.toolName ?? 'the held call'} run?`;
    return this.message(taskId, [
      textPart(`${question} Answer with a data part: { "approved": true } or { "approved": false, "reason": "..." }.`),
      dataPart({ interruptId: hold.id, kind: hold.kind, ...(hold.toolName ? { toolName: hold.toolName } : {}), input: hold.input ?? null }),
    ]);
  }

  /** The task of a run, as it stands now. */
  private async task(runId: string, access: Access): Promise<Task> {
    const run = await this.listing(runId, access);
    const handle = this.client.getHandle(runId);
    const state = stateOf(this.root, run.state);
    const base = { id: runId, contextId: this.contextOf(runId), history: [], metadata: { 'keel/runId': runId } };
    const timestamp = run.endedAt ?? new Date().toISOString();
    if (run.state === 'waiting') {
      const [hold] = await handle.pendingHolds().catch(() => []);
      return { ...base, artifacts: [], status: { state, message: hold ? this.holdMessage(runId, hold) : undefined, timestamp } };
    }
    if (run.state === 'running') return { ...base, artifacts: [], status: { state, message: undefined, timestamp } };
    try {
      const result = await handle.result();
      const parts = [textPart(result.text), ...(result.output !== undefined ? [dataPart(result.output)] : [])];
      return {
        ...base,
        artifacts: [{ artifactId: 'answer', name: 'answer', description: `the answer of ${this.agent.name}`, parts, metadata: undefined, extensions: [] }],
        status: { state, message: this.message(runId, [textPart(result.text)]), timestamp },
      };
    } catch (error) {
      const failure = toKeelError(error);
      return { ...base, artifacts: [], status: { state, message: this.message(runId, [textPart(`${failure.status}: ${failure.message}`)]), timestamp } };
    }
  }

  /** A run's events as task updates, until it ends or waits for input. */
  private async *follow(runId: string, access: Access): AsyncGenerator<StreamResponse> {
    const { TaskState } = this.root;
    const contextId = this.contextOf(runId);
    const update = (state: TaskState, message: Message | undefined): StreamResponse => ({
      payload: {
        $case: 'statusUpdate',
        value: { taskId: runId, contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata: undefined },
      },
    });
    for await (const event of this.client.getHandle(runId).events()) {
      if (event.type === 'toolCall') yield update(TaskState.TASK_STATE_WORKING, this.message(runId, [textPart(`calling ${event.name}`)]));
      else if (event.type === 'hold') {
        yield update(TaskState.TASK_STATE_INPUT_REQUIRED, this.holdMessage(runId, event.interrupt));
        return;
      } else if (event.type === 'end') {
        const task = await this.task(runId, access);
        for (const artifact of task.artifacts)
          yield { payload: { $case: 'artifactUpdate', value: { taskId: runId, contextId, artifact, append: false, lastChunk: true, metadata: undefined } } };
        yield update(task.status?.state ?? TaskState.TASK_STATE_COMPLETED, task.status?.message);
        return;
      }
    }
  }
}

/** Serves A2A for the exposed agents: their cards, and one JSON-RPC endpoint each. */
export function a2aHttpHandler({ client, agents, version, origin }: A2AServeOptions): {
  card: (agent: string) => Record<string, unknown> | undefined;
  handle: (agent: string, request: Request, access?: Access) => Promise<Response>;
} {
  const server = sdk<typeof import('@a2a-js/sdk/server')>('server');
  const legacy = sdk<typeof import('@a2a-js/sdk/compat/v0_3/server')>('compat/v0_3/server');
  const { A2A_VERSION_HEADER } = sdk<Root>('');
  const byName = new Map(agents.map((agent) => [agent.name, agent]));
  const endpoint = (agent: string) => `${origin() ?? ''}/a2a/${encodeURIComponent(agent)}`;
  const cardJson = (agent: string) => {
    const exposed = byName.get(agent);
    return exposed ? agentCardJson(exposed, endpoint(agent), version) : undefined;
  };
  const handlers = new Map(
    agents.map((agent) => {
      const tasks = new RunTasks(client, agent, () => cardJson(agent.name) as unknown as AgentCard);
      return [agent.name, { current: new server.JsonRpcTransportHandler(tasks), legacy: new legacy.LegacyJsonRpcTransportHandler(tasks) }];
    }),
  );
  return {
    card: cardJson,
    async handle(agent, request, access = OPEN_ACCESS) {
      const handler = handlers.get(agent);
      if (!handler) return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32601, message: `no A2A agent "${agent}" here` } }, { status: 404 });
      let body: unknown;
      try {
        body = await request.json();
      } catch (error) {
        return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32700, message: `the body is not JSON: ${(error as Error).message}` } });
      }
      const requestedVersion = request.headers.get(A2A_VERSION_HEADER) ?? undefined;
      // A client that names no version speaks v0.3 (`message/send`), as the SDK's own servers take it.
      const transport = !requestedVersion || requestedVersion === '0.3' ? handler.legacy : handler.current;
      const context = new server.ServerCallContext({ ...(requestedVersion ? { requestedVersion } : {}), user: new VerifiedUser(access) });
      const answer = await transport.handle(body as Record<string, unknown>, context);
      if (!(Symbol.asyncIterator in answer)) return Response.json(answer);
      const encoder = new TextEncoder();
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          try {
            for await (const event of answer) controller.enqueue(encoder.encode(`data: ${JSON.stringify(event)}\n\n`));
          } catch (error) {
            const failure = { jsonrpc: '2.0', id: (body as { id?: unknown }).id ?? null, error: { code: -32603, message: (error as Error).message } };
            controller.enqueue(encoder.encode(`event: error\ndata: ${JSON.stringify(failure)}\n\n`));
          }
          controller.close();
        },
      });
      return new Response(stream, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });
    },
  };
}
