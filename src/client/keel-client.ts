/**
 * The typed client: start a run, get its handle, read its status and result, cancel it.
 * Node side; uses the same message constants as the workflow.
 */
import { DEFAULT_FAIRNESS, priorityOf, type FairnessConfig } from '../core/fairness';
import type { RunVersioning } from '../core/versioning';
import { decodePayload } from './decode-payload';
import { Client, ServiceError, WorkflowNotFoundError, type WorkflowExecutionDescription } from '@temporalio/client';
import { awaitResult, closedRunError, decisionError, endedFromOutside, type ResultOptions } from './run-ended';

export type { ResultOptions };
import type { TypedSearchAttributes } from '@temporalio/common';
import { randomUUID } from 'node:crypto';
import { KeelError } from '../core/errors';
import { inspectTask } from '../node/inspect-task';
import { SessionHandle } from './session-handle';
import { assertInputFits } from './input-limit';
import { runErrorOf } from '../node/run-errors';
import { taskView, type TaskView } from '../core/tasks';
import { KEEL_AGENT } from '../core/search-attributes';
import { holdsOf, listHolds, type HoldView } from './holds';
import { decideCommands } from './decide-commands';
import { unknownSteerError } from './unknown-update';
import { retryingUpdate } from '../node/update-retry';
import { taskQueuePollers } from '../node/task-queue-pollers';
import { listRuns, type ListRunsOptions, type RunListing } from './runs';
import { startGenerate } from './start-run';
import { forkRun, type ForkOptions, type ForkStarted } from './fork';

export { runErrorOf };
import { promptExcerpt, type Message, type StreamedText } from '../core/messages';

export { promptExcerpt };
import { runEvents, streamedTextOf, type InFlight, type RunEvent, type RunEventsOptions } from './run-events';
import { toolAttemptsOf, type ToolNames } from './tool-attempts';
import type { Decision, DecisionAccepted } from '../core/holds';
import type { Hold, MiddlewareRefInput, RunInputOptions, RunResult, RunStatus } from '../core/run';
import type { KeelConfig } from '../config/schema';
import { OutputOptionSchema, outputSpecOf, outputValidator, type OutputOption, type OutputSpec } from '../core/output';
import type { Agent } from '../define';
import { describeZodError } from '../core/schema-errors';
import { connectClient } from '../worker/connect';
import { GENERATE_WORKFLOW, messagesQuery, resumeSignal, resumeUpdate, statusQuery, steerUpdate } from '../core/protocol';
import type { SteerRecord } from '../core/steering';
import { checkedPrincipal, principalMemo, type Principal } from '../core/principal';

/** Options of `KeelClient.start`. */
export interface StartRunOptions {
  /** Run id (the workflow id) of your choosing; a fresh `<idPrefix>-<uuid>` when absent. */
  runId?: string;
  /** Prefix of the generated run id (default `run`): `<idPrefix>-<uuid>`. */
  idPrefix?: string;
  /** Middleware added after the agent's own. */
  use?: MiddlewareRefInput[];
  /** Overrides the agent's maxTurns. */
  maxTurns?: number;
  /** Overrides the client's task queue. */
  taskQueue?: string;
  /** `wait` (default) pauses on a hold; `return` ends the run `interrupted`. */
  interruptMode?: RunInputOptions['interruptMode'];
  /** How long a hold waits for a decision, e.g. '2 days'. */
  interruptTimeout?: string;
  /** What a timed-out hold becomes: 'deny' (default) or 'fail'. */
  onInterruptTimeout?: RunInputOptions['onInterruptTimeout'];
  /** Answers the holds of an interrupted run (interruptMode 'return'); `prompt` must be its messages. */
  resume?: RunInputOptions['resume'];
  /** Artifacts the run starts with. */
  artifacts?: RunInputOptions['artifacts'];
  /** For a client-managed agent: the conversation so far (and artifacts, custom data); the result carries it on. */
  state?: RunInputOptions['state'];
  /** When a long run continues as new (history bytes or events; defaults 4 MiB, 10,000 events). */
  continueAsNewAt?: RunInputOptions['continueAsNewAt'];
  /**
   * The answer this run must give, over the agent's own: a JSON Schema, or `{ schema, retries?, name? }`
   * (docs/structured-output.md). The result's `output` holds it.
   */
  output?: OutputOption;
  /** Whose run it is: the tenant it belongs to (docs/tenants.md); runs it starts belong to it too. */
  tenant?: string;
  /** Whose run it is: who started it (a verified subject; docs/tenants.md). */
  owner?: string;
}

/** A run's result with its structured answer typed (`unknown` when the run was started by agent name). */
export type TypedRunResult<Output> = Omit<RunResult, 'output'> & {
  /** The structured answer, parsed and checked against the output schema (set when the run ended `stop`). */
  output?: Output;
};

/** Options of `new RunHandle`. */
export interface RunHandleOptions {
  client: Client;
  /** The run id (the workflow id). */
  runId: string;
  /** How runs of each agent move between builds (`deployment.agents`): what a fork of this run starts with. */
  versioning?: Readonly<Record<string, RunVersioning>>;
  /** The config's `fairness`: the priority a fork of this run starts with (the defaults when absent). */
  fairness?: FairnessConfig;
}

/** Options of `RunHandle.decide`. */
export interface DecideOptions {
  /** How long to wait for a worker to take the decision; unbounded when absent. */
  timeoutMs?: number;
}

/** How long a decision waits to learn which call it holds before it goes without. */
const TARGET_LOOKUP_MS = 5000;

/** Options of `RunHandle.steer`. */
export interface SteerOptions {
  /** Cancel the model call in flight (not tool calls) and call the model again at once with the message. */
  interrupt?: boolean;
  /**
   * A sub-agent run below this run, by the key its run id ends with (`writer-1`; deeper,
   * `writer-1/critic-1`): the message steers that run instead.
   */
  agent?: string;
  /** The update id: sent again with the same id, the message is added once. Default: a new random id. */
  steerId?: string;
}

/** A handle on a run; `Output` types its result's structured answer. */
export class RunHandle<Output = unknown> {
  private readonly client: Client;
  /** What each tool activity of the run was for, learned from its history once per call. */
  private readonly toolNames: ToolNames = new Map();
  /** The run id (the workflow id). */
  readonly runId: string;

  private readonly versioning: Readonly<Record<string, RunVersioning>>;
  private readonly fairness: FairnessConfig;

  constructor({ client, runId, versioning = {}, fairness = DEFAULT_FAIRNESS }: RunHandleOptions) {
    this.client = client;
    this.runId = runId;
    this.versioning = versioning;
    this.fairness = fairness;
  }

  /**
   * Starts a new run whose conversation is this run's up to turn `at` (docs/fork.md): no tool
   * call before it runs again; `message` and `toolResults` edit it there, `agent` and `model`
   * go on with others. Checked by a worker first: bad input starts nothing (INVALID_ARGUMENT).
   */
  async fork(options: ForkOptions): Promise<ForkStarted & { handle: RunHandle }> {
    const started = await forkRun(this.client, this.runId, options, { versioning: this.versioning, fairness: this.fairness });
    return { ...started, handle: new RunHandle({ client: this.client, runId: started.runId, versioning: this.versioning, fairness: this.fairness }) };
  }

  private get workflow() {
    return this.client.workflow.getHandle(this.runId);
  }

  /** Lifecycle, turn, usage and pending holds (works on finished runs too). */
  async status(): Promise<RunStatus> {
    const status = await this.reportedStatus();
    if (status.state !== 'running' && status.state !== 'waiting') return status;
    // A run ended from outside (terminated, timed out) still answers its last state: Temporal's word wins.
    const ended = await endedFromOutside(this.workflow);
    return ended ? { ...status, ...ended, interrupts: [] } : status;
  }

  /**
   * The status as the run itself reports it (its `status` query alone): `status()` without
   * asking Temporal whether the run was ended from outside. For polling while a run goes on.
   */
  async reportedStatus(): Promise<RunStatus> {
    try {
      return await queryAgainIfTimedOut(() => this.workflow.query(statusQuery));
    } catch (error) {
      throw runErrorOf(error);
    }
  }

  /**
   * The text the model call under way has streamed so far (from its heartbeat; undefined when
   * no model call is streaming). `events()` builds on `inFlight()`, which reads it too.
   */
  async streamedText(): Promise<StreamedText | undefined> {
    return await this.streamedTextIn(await this.workflow.describe());
  }

  /**
   * What the run's workers are doing now, from one look at the run (its pending activities): the
   * text the model call under way has streamed so far, and each tool call under way with the
   * worker (`<pid>@<host>`) running its current attempt. A call that starts and ends between two
   * looks is not seen.
   */
  async inFlight(): Promise<InFlight> {
    const description = await this.workflow.describe();
    const text = await this.streamedTextIn(description);
    const tools = await toolAttemptsOf(this.client, description, this.toolNames);
    return { ...(text ? { text } : {}), tools, history: `${description.runId}/${description.historyLength}` };
  }

  /** The text a pending model call of `description` has streamed (its heartbeat details). */
  private async streamedTextIn(description: WorkflowExecutionDescription): Promise<StreamedText | undefined> {
    for (const activity of description.raw.pendingActivities ?? []) {
      if (activity.activityType?.name !== 'callModel') continue;
      // Details this client cannot read (another converter, a key it lacks): nothing streamed to show.
      const text = streamedTextOf(await decodePayload(this.client, activity.heartbeatDetails?.payloads?.[0]));
      if (text) return text;
    }
    return undefined;
  }

  /**
   * The run's events as they happen, until it ends: streamed text, messages, tool calls and
   * results, holds, the end (see RunEvent). Nothing is recorded in the run's history for them.
   */
  events(options: RunEventsOptions = {}): AsyncGenerator<RunEvent> {
    return runEvents(this, options);
  }

  /** Messages from index `from` on. */
  async messages(from = 0): Promise<Message[]> {
    try {
      return await queryAgainIfTimedOut(() => this.workflow.query(messagesQuery, from));
    } catch (error) {
      throw runErrorOf(error);
    }
  }

  /**
   * Waits for the run to end; a failed or cancelled run throws a KeelError with its status.
   * Temporal out of reach meanwhile (a server restart, a dropped connection) is not the run's
   * outcome: the wait goes on for up to `reconnectForMs` (default 10 minutes) of it, then throws
   * UNAVAILABLE saying the run may still be going.
   */
  result(options: ResultOptions = {}): Promise<TypedRunResult<Output>> {
    return awaitResult(this.client, this.runId, options) as Promise<TypedRunResult<Output>>;
  }

  /** Holds waiting for a decision. */
  async pendingHolds(): Promise<Hold[]> {
    return (await this.status()).interrupts;
  }

  /**
   * Sends a decision as the `resume` update and waits for the run to accept it. A refused
   * decision (unknown or already-decided id, malformed, a respond that fails the tool's
   * output schema) throws a KeelError saying why; the run is unaffected.
   */
  async decide(given: Decision, { timeoutMs }: DecideOptions = {}): Promise<DecisionAccepted> {
    // Who decides is recorded with the decision: as the caller said, or this client's identity.
    const decision = { ...given, decidedBy: given.decidedBy ?? this.client.options.identity };
    const targeted = await this.targeted(decision);
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    // One update id for every attempt of this decision: the server takes it at most once.
    const updateId = randomUUID();
    const update = () => this.workflow.executeUpdate(resumeUpdate, { args: [targeted], updateId });
    try {
      return await retryingUpdate(() => (deadline === undefined ? update() : this.client.withDeadline(deadline, update)), {
        what: `the decision on ${targeted.interruptId}`,
        ...(deadline !== undefined ? { deadline } : {}),
      });
    } catch (error) {
      throw await decisionError(this.client, this.runId, error, { timeoutMs, interruptId: decision.interruptId, deadline });
    }
  }

  /**
   * The decision with the tool and call of the hold it is meant for (from the run's pending
   * interrupts), so the run refuses it for any other call with that id: after a `workflow
   * reset` the server re-applies decisions to a run whose holds may come back in another order.
   */
  private async targeted(decision: Decision): Promise<Decision> {
    if (decision.toolName !== undefined) return decision;
    // Bounded: a signal is for when no worker may be answering; the run itself says what else is wrong.
    const held = await this.client
      .withDeadline(Date.now() + TARGET_LOOKUP_MS, () => this.workflow.query(statusQuery))
      .then(
        (status) => status.interrupts.find((interrupt) => interrupt.id === decision.interruptId),
        () => undefined,
      );
    return held?.toolName ? { ...decision, toolName: held.toolName, ...(held.ref !== undefined ? { ref: held.ref } : {}) } : decision;
  }

  /**
   * Adds a user message to the run under way (the `steer` update): its next model call takes it,
   * or with `interrupt` the model call in flight is cancelled and made again with it. Resolves to
   * the run's record of the message (`pending` until taken). Refused, with why, for an empty
   * text, a run that has ended or has finished its loop, and a sub-agent key with no run.
   */
  async steer(text: string, { interrupt, agent, steerId = randomUUID() }: SteerOptions = {}): Promise<SteerRecord> {
    const below = agent === undefined ? undefined : await this.subAgentRun(agent);
    // A server-managed sub-agent runs in a session of its own: its run in flight is steered.
    if (below instanceof SessionHandle) return below.steer(text, { ...(interrupt ? { interrupt } : {}), steerId });
    const target = below ?? this;
    try {
      return await retryingUpdate(
        () => target.workflow.executeUpdate(steerUpdate, { args: [{ text, ...(interrupt ? { interrupt: true } : {}) }], updateId: steerId }),
        { what: `the steer ${steerId}` },
      );
    } catch (error) {
      throw unknownSteerError(error, target.runId) ?? (await closedRunError(this.client, target.runId, error, { takes: 'steering' }));
    }
  }

  /**
   * The handle of sub-agent run `key` below this run (`<runId>/<key>`), or for a server-managed
   * sub-agent the session the run started for it (`<runId>/<key>` is its session id);
   * NOT_FOUND, naming both, when there is neither.
   */
  private async subAgentRun(key: string): Promise<RunHandle | SessionHandle> {
    if (!/^[^/\s]+-\d+(\/[^/\s]+-\d+)*$/.test(key)) {
      throw new KeelError(
        'INVALID_ARGUMENT',
        `sub-agent "${key}": expected the key its run id ends with, <agent>-<n> (e.g. writer-1), or a path of them (writer-1/critic-1)`,
      );
    }
    const exists = (workflowId: string) =>
      this.client.workflow
        .getHandle(workflowId)
        .describe()
        .then(
          () => true,
          (error: unknown) => {
            if (error instanceof WorkflowNotFoundError) return false;
            throw runErrorOf(error);
          },
        );
    const child = new RunHandle({ client: this.client, runId: `${this.runId}/${key}` });
    if (await exists(child.runId)) return child;
    const agent = /([^/]+)-\d+$/.exec(key)![1]!;
    // Only steered, so no task queue is needed (a session's turns are started by its own workflow).
    const session = new SessionHandle({ client: this.client, agent, sessionId: child.runId, taskQueue: '' });
    if (await exists(session.workflowId)) return session;
    throw new KeelError('NOT_FOUND', `run "${this.runId}" has no sub-agent run "${key}" (no run "${child.runId}", nor a session "${session.workflowId}")`);
  }

  /** Approves a held call (or a budget hold: the run continues with its limit renewed). */
  approve(interruptId: string, { reason, ...options }: { reason?: string } & DecideOptions = {}): Promise<DecisionAccepted> {
    return this.decide({ interruptId, approved: true, ...(reason !== undefined ? { reason } : {}) }, options);
  }

  /** Denies a held call: the model is told it was refused (a budget hold: the run stops). */
  deny(interruptId: string, { reason, ...options }: { reason?: string } & DecideOptions = {}): Promise<DecisionAccepted> {
    return this.decide({ interruptId, approved: false, ...(reason !== undefined ? { reason } : {}) }, options);
  }

  /** Answers a held call with `output` in place of running it (checked against the tool's output schema). */
  respond(interruptId: string, output: unknown): Promise<DecisionAccepted> {
    return this.decide({ interruptId, respond: output });
  }

  /** Restarts a held call with a payload for the stage that held it (a tool's own question). */
  restart(interruptId: string, payload: Record<string, unknown> | true = true): Promise<DecisionAccepted> {
    return this.decide({ interruptId, restart: payload });
  }

  /**
   * Sends a decision as the `resume` signal, exactly as given (add `toolName` and `ref` to
   * guard it): fire-and-forget, a refused one shows in `status.refusedDecision`.
   */
  async signalDecision(decision: Decision): Promise<void> {
    try {
      await this.workflow.signal(resumeSignal, { ...decision, decidedBy: decision.decidedBy ?? this.client.options.identity });
    } catch (error) {
      throw await closedRunError(this.client, this.runId, error, { interruptId: decision.interruptId });
    }
  }

  /** Cancels the run; the model or tool call under way is cancelled too. */
  async cancel(): Promise<void> {
    try {
      // Temporal accepts a cancellation of a run that has ended and does nothing: say it ended, and how.
      const status = (await this.workflow.describe()).status.name;
      if (status !== 'RUNNING')
        throw new KeelError('FAILED_PRECONDITION', `run "${this.runId}" has already ended (${status.toLowerCase()}); there is nothing to abort`);
      await this.workflow.cancel();
    } catch (error) {
      throw runErrorOf(error);
    }
  }

  /** Temporal's view of the run (status, times, history length). */
  describe() {
    return this.workflow.describe();
  }

  /** The background tasks the run started, each with where it stands now. */
  async tasks(): Promise<TaskView[]> {
    const records = (await this.status()).tasks;
    return Promise.all(
      records.map(async (record): Promise<TaskView> => {
        const report = await inspectTask(this.client, record.runId);
        // Decided on the task's own run, which works whether or not the run that launched it still goes on.
        const holds = report.status === 'pending' ? await holdsOf(this.client, record.runId) : [];
        return taskView(
          record,
          report,
          holds.map((hold) => ({ ...hold, ...decideCommands(record.runId, hold.id, hold.approvable) })),
        );
      }),
    );
  }
}

/** A run's output option as a spec, refused with what is wrong before the run starts. */
function checkedOutputSpec(option: OutputOption): OutputSpec {
  const parsed = OutputOptionSchema.safeParse(option);
  if (!parsed.success) throw new KeelError('INVALID_ARGUMENT', `invalid output option: ${describeZodError(parsed.error, 'output')}`, { path: 'output' });
  const spec = outputSpecOf(parsed.data);
  try {
    outputValidator(spec.schema);
  } catch (error) {
    throw new KeelError('INVALID_ARGUMENT', `output.schema: ${(error as Error).message}`, { path: 'output.schema' });
  }
  return spec;
}

/**
 * A query, asked once more when Temporal timed it out before a worker took it: two queries at once
 * on a run that has just ended can leave one unanswered for the server's whole query timeout on a
 * busy worker, and asked again, alone, it is answered.
 */
async function queryAgainIfTimedOut<T>(query: () => Promise<T>): Promise<T> {
  try {
    return await query();
  } catch (error) {
    const said = `${(error as Error)?.message ?? ''} ${((error as Error)?.cause as Error | undefined)?.message ?? ''}`;
    if (!(error instanceof ServiceError) || !/DEADLINE_EXCEEDED|query timed out/.test(said)) throw error;
    return await query();
  }
}

/** Options of `new KeelClient`. */
export interface KeelClientOptions {
  /** The underlying Temporal client. */
  temporal: Client;
  /** Task queue runs are started on. */
  taskQueue: string;
  /** Per agent, how its runs move between builds (the config's `deployment.agents`); absent agents take the workers' default. */
  versioning?: Readonly<Record<string, RunVersioning>>;
  /** The priority of each kind of work and each tenant's weight (the config's `fairness`); the defaults when absent. */
  fairness?: FairnessConfig;
}

/** Typed access to keel runs. */
export class KeelClient {
  /** The underlying Temporal client. */
  readonly temporal: Client;
  /** Task queue runs are started on. */
  readonly taskQueue: string;
  private readonly versioning: Readonly<Record<string, RunVersioning>>;
  /** The priority of each kind of work and each tenant's weight it starts runs with (docs/tenants.md, "Fair shares"). */
  readonly fairness: FairnessConfig;

  constructor({ temporal, taskQueue, versioning = {}, fairness = DEFAULT_FAIRNESS }: KeelClientOptions) {
    this.temporal = temporal;
    this.taskQueue = taskQueue;
    this.versioning = versioning;
    this.fairness = fairness;
  }

  /** The namespace's runs, newest first, by agent and lifecycle (`keel list`); read from Temporal, no worker needed. */
  list(options: ListRunsOptions = {}): Promise<RunListing[]> {
    return listRuns(this.temporal, options);
  }

  /**
   * Connects with the connection and task queue of a config. `identity` names this client to
   * Temporal and in the decisions it sends (`decidedBy`, kept in each run's status and result);
   * default: Temporal's `<pid>@<host>`.
   */
  static async connect(config: KeelConfig, { identity }: { identity?: string } = {}): Promise<KeelClient> {
    return new KeelClient({
      temporal: await connectClient(config, identity !== undefined ? { identity } : {}),
      taskQueue: config.taskQueue,
      fairness: config.fairness,
      ...(config.deployment ? { versioning: config.deployment.agents } : {}),
    });
  }

  /**
   * Starts a run of `agent` (by name, or its definition, which types the result's `output`) on a
   * prompt (or on whole messages).
   */
  async start<Output = unknown>(
    agentOrName: string | Agent<Output>,
    prompt: string | Message[],
    {
      idPrefix = 'run',
      runId = `${idPrefix}-${randomUUID()}`,
      use = [],
      maxTurns,
      taskQueue,
      interruptMode,
      interruptTimeout,
      onInterruptTimeout,
      resume,
      artifacts,
      state,
      continueAsNewAt,
      output,
      tenant,
      owner,
    }: StartRunOptions = {},
  ): Promise<RunHandle<Output>> {
    const agent = typeof agentOrName === 'string' ? agentOrName : agentOrName.name;
    const outputSpec = output === undefined ? undefined : checkedOutputSpec(output);
    const messages: Message[] = typeof prompt === 'string' ? [{ role: 'user', content: [{ text: prompt }] }] : prompt;
    const input: RunInputOptions = {
      agent,
      messages,
      use: use.map((ref) => ({ name: ref.name, config: ref.config ?? {} })),
      ...(maxTurns !== undefined ? { maxTurns } : {}),
      ...(interruptMode ? { interruptMode } : {}),
      ...(interruptTimeout ? { interruptTimeout } : {}),
      ...(onInterruptTimeout ? { onInterruptTimeout } : {}),
      ...(resume ? { resume } : {}),
      ...(artifacts?.length ? { artifacts } : {}),
      ...(state ? { state } : {}),
      ...(continueAsNewAt ? { continueAsNewAt } : {}),
      ...(outputSpec ? { output: outputSpec } : {}),
    };
    assertInputFits(this.temporal, input, `the input of run ${runId} (agent "${agent}")`);
    // What `describe`, `list` and the Web UI show of the run: its agent and how its prompt starts.
    const excerpt = promptExcerpt(messages);
    const principal = checkedPrincipal({ tenant, owner });
    await startGenerate(this.temporal, {
      runId,
      agent,
      taskQueue: taskQueue ?? this.taskQueue,
      args: [input],
      excerpt,
      versioning: this.versioning[agent],
      memo: principalMemo(principal),
      priority: priorityOf(this.fairness, 'run', principal.tenant),
    });
    return new RunHandle<Output>({ client: this.temporal, runId, versioning: this.versioning, fairness: this.fairness });
  }

  /** Starts a run and waits for its result (typed by the agent's output schema when given its definition). */
  async run<Output = unknown>(agent: string | Agent<Output>, prompt: string | Message[], options: StartRunOptions = {}): Promise<TypedRunResult<Output>> {
    return (await this.start(agent, prompt, options)).result();
  }

  /** A handle on an existing run. */
  getHandle(runId: string): RunHandle {
    return new RunHandle({ client: this.temporal, runId, versioning: this.versioning, fairness: this.fairness });
  }

  /**
   * A session of a server-managed agent (session: 'server'). `tenant` and `owner` say who sends
   * through this handle: a session it starts belongs to them, and each turn records its sender.
   */
  session(agent: string, sessionId: string, principal: Principal = {}): SessionHandle {
    return new SessionHandle({
      client: this.temporal,
      agent,
      sessionId,
      taskQueue: this.taskQueue,
      versioning: this.versioning[agent],
      principal: checkedPrincipal(principal),
      fairness: this.fairness,
    });
  }

  /**
   * How many workers poll the task queue for workflow tasks now: Temporal's pollers seen within
   * the last 90 s (a live worker polls again at least every minute; Temporal keeps listing a
   * worker that died for minutes), less this host's worker processes that have exited. 0 means a
   * run waits until a worker starts.
   */
  async workersPolling(taskQueue = this.taskQueue): Promise<number> {
    return (await taskQueuePollers(this.temporal, taskQueue, 'workflow')).length;
  }

  /**
   * Every hold waiting for a decision in the namespace, once each (a sub-agent's at the topmost
   * run that shows it), with the commands that decide it; read from Temporal, no worker needed.
   */
  holds(): Promise<HoldView[]> {
    return listHolds(this.temporal);
  }

  /**
   * Stops a background task (`<agent>:<runId>`): its run is cancelled and settles as aborted. The
   * id must name a task: a run of that agent that another run started (Temporal records its
   * parent); anything else (a root run, a run of another agent) is refused, untouched.
   */
  async abortTask(taskId: string): Promise<void> {
    const separator = taskId.indexOf(':');
    if (separator <= 0 || separator === taskId.length - 1) throw new KeelError('INVALID_ARGUMENT', `task id "${taskId}" is not of the form <agent>:<runId>`);
    const agent = taskId.slice(0, separator);
    const runId = taskId.slice(separator + 1);
    const handle = this.getHandle(runId);
    let description;
    try {
      description = await handle.describe();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) throw new KeelError('NOT_FOUND', `task id "${taskId}": no run "${runId}" exists`);
      throw runErrorOf(error);
    }
    const info = description.raw.workflowExecutionInfo;
    if (description.type !== GENERATE_WORKFLOW || !info?.parentExecution?.workflowId) {
      throw new KeelError(
        'INVALID_ARGUMENT',
        `task id "${taskId}" names run "${runId}", which is not a background task (no run started it); to cancel that run itself: keel abort ${runId}`,
      );
    }
    const runAgent = await this.agentOf(runId, description.typedSearchAttributes);
    if (runAgent !== undefined && runAgent !== agent) {
      throw new KeelError(
        'INVALID_ARGUMENT',
        `task id "${taskId}" names run "${runId}", which is a task of agent "${runAgent}", not "${agent}"; its task id is ${runAgent}:${runId}`,
      );
    }
    await handle.cancel();
  }

  /** The agent a run runs: its KeelAgent search attribute, else its first event's input (undefined when neither says). */
  private async agentOf(runId: string, searchAttributes: TypedSearchAttributes): Promise<string | undefined> {
    const indexed = searchAttributes.get(KEEL_AGENT);
    if (indexed !== undefined) return indexed;
    const { history } = await this.temporal.workflowService.getWorkflowExecutionHistory({
      namespace: this.temporal.options.namespace,
      execution: { workflowId: runId },
      maximumPageSize: 1,
    });
    const input = await decodePayload<{ agent?: unknown }>(this.temporal, history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]);
    return typeof input?.agent === 'string' ? input.agent : undefined;
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    await this.temporal.connection.close();
  }
}
