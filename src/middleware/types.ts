/**
 * The middleware contract. A middleware is defined once with `defineMiddleware({ name,
 * configSchema, create })`; per run, `create` returns hooks that wrap the reference's three
 * stages: each loop iteration (`wrapGenerate`, iteration 0 encloses all later ones), each
 * model call (`wrapModel`) and each tool call (`wrapTool`), plus contributions (tools,
 * system-prompt fragments) and the tool-error policy (`coversToolError`). Listed first =
 * outermost. Hooks run inside the workflow: they must be deterministic and reach the outside
 * world only through the capabilities of `MiddlewareContext`.
 */
import type { Principal } from '../core/principal';
import type { z } from 'zod';
import type { HoldKind } from '../core/holds';
import type { Message, ModelRequest, ModelResponse, ToolDefinition, ToolRequest } from '../core/messages';
import type { Usage } from '../core/usage';
import type { AgentSpec, MiddlewareRef } from '../core/run';
import type { ActivityCall } from './activity-door';
import type { ArtifactStore } from '../core/artifacts';

/** One iteration of the tool loop, as `wrapGenerate` sees it. */
export interface GenerateParams {
  /** 0 for the first model call of the run. */
  iteration: number;
  /**
   * The conversation this iteration sends to the model. A hook may pass `next` a rewritten
   * conversation (compression, injected messages): the request is built from it.
   */
  messages: Message[];
}

/** What an iteration (and so the run) produced. */
export interface GenerateOutcome {
  /** The final model response; its message is the last of `messages`. */
  response: ModelResponse;
  /** The whole conversation at the end of the run, as the result reports it. */
  messages: Message[];
}

/** One model call, as `wrapModel` sees it. */
export interface ModelCallParams {
  /** The model the call goes to (middleware may send it elsewhere). */
  model: string;
  request: ModelRequest;
  iteration: number;
}

/** One tool call, as `wrapTool` sees it (`Decision`: what the stage's holds' decisions come to). */
export interface ToolCallParams<Decision = unknown> {
  request: ToolRequest;
  /** The tool's definition (a call to an unknown tool fails before any hook runs). */
  tool: ToolDefinition;
  iteration: number;
  /** The messages of the model request that produced this call. */
  requestMessages: Message[];
  /**
   * Set only for the stage that raised the hold this call restarts: the decision, parsed by
   * the decision schema of the hold's kind (`defineHold`); for a hold nobody declared, the
   * payload as sent (`{ approved, reason? }`, a restart's object, `true` for a bare restart).
   * When the stage calls `next`, the inner stages see a fresh call.
   */
  resumed?: Decision;
  /**
   * True when this call restarts a hold that a later (inner) stage raised, after this stage
   * had let the call through with the same input. A restart that replaced the input is never
   * released: every gate checks it again.
   */
  released?: boolean;
  /** The call's input before a restart replaced it. */
  originalInput?: unknown;
}

/** Continues to the next (inner) stage. */
export type Next<P, R> = (params: P) => Promise<R>;

/**
 * Hooks one middleware instance contributes to one run (`Carried`: what its `carry` returns;
 * `Decision`: what its holds' decisions come to, `params.resumed`).
 */
export interface MiddlewareHooks<Carried = unknown, Decision = unknown> {
  /** Wraps each loop iteration; iteration 0 encloses all later ones. */
  wrapGenerate?: (params: GenerateParams, next: Next<GenerateParams, GenerateOutcome>) => Promise<GenerateOutcome>;
  /** Wraps each model call. */
  wrapModel?: (params: ModelCallParams, next: Next<ModelCallParams, ModelResponse>) => Promise<ModelResponse>;
  /**
   * Wraps each tool call; resolves to the tool's output. Hold the call with
   * `context.interrupt(data)`, answer it with an error the model sees with `toolFail(message)`.
   */
  // A method: the runtime holds every middleware's hooks as MiddlewareHooks, whatever its Decision.
  wrapTool?(params: ToolCallParams<Decision>, next: Next<ToolCallParams<Decision>, unknown>): Promise<unknown>;
  /** Tools this middleware adds to the run, with their workflow-local implementations. */
  tools?: ContributedTool[];
  /** Text appended to the system prompt. */
  systemPrompt?: string;
  /**
   * Middleware every sub-agent run this run starts gets, as it stands at the start of that
   * run (a Budget hands down its limit and what the tree has spent, so a sub-agent cannot
   * spend what an ancestor no longer has).
   */
  forChildRuns?: () => MiddlewareRef[];
  /**
   * The tool-error policy: return true to answer a failed call of `toolName` with
   * `{ "error": "<message>" }` instead of failing the run. Consulted after the whole wrapTool
   * chain, and only for the tool's own failures (it threw, its input failed its schema, or
   * no such tool exists); never for errors a hook raised, holds, or cancellation. A failure
   * is answered when any middleware of the run covers it.
   */
  coversToolError?: (toolName: string) => boolean;
  /**
   * State to carry into the next run of the chain when a long run continues as new at a turn
   * boundary (JSON-plain); it comes back there as `context.carried`, parsed by the middleware's
   * `carrySchema`. Only what the messages and the run's usage do not already hold (a read
   * cache, a renewed budget's baseline).
   */
  carry?: () => Carried;
}

/** What a contributed tool's `run` gets besides its input. */
export interface ContributedToolContext extends ToolCallParams {
  /**
   * Holds this call for a decision, as a tool's own question: `data` is shown to whoever
   * decides, and the restarted call gets the decision's payload as `resumed`.
   */
  interrupt: (data?: Record<string, unknown>) => never;
}

/** A tool a middleware contributes; it runs inside the workflow. */
export interface ContributedTool {
  definition: ToolDefinition;
  run: (input: unknown, context: ContributedToolContext) => Promise<unknown>;
}

/**
 * What a middleware may use while it works (`Carried`: what its `carried` is, parsed by its
 * `carrySchema`; `Decision`: what its holds' decisions come to, parsed by their kinds).
 */
export interface MiddlewareContext<Carried = unknown, Decision = unknown> {
  /** The agent being run. */
  agent: AgentSpec;
  /** Calls a model through the model activity (counted in the run's usage). */
  callModel: (model: string, request: ModelRequest) => Promise<ModelResponse>;
  /**
   * Calls one of the middleware's own activities through its door (`defineActivity`: name,
   * input and output schemas, regular or local), typed by the door; the worker runs the
   * implementation the feature's Node half registered for it. Throws a KeelError saying what
   * went wrong.
   */
  activity: ActivityCall;
  /** The run's artifacts: what its result carries (Artifacts lists them to the model; Agents merges a sub-agent's). */
  artifacts: ArtifactStore;
  /** Usage of every model call of the run so far. */
  usage: () => Usage;
  /** The messages the run started with. */
  inputMessages: readonly Message[];
  /**
   * For a run of a server-managed agent's session: its id, what the session spent before this
   * run, and who sent this turn when the client said (docs/tenants.md).
   */
  session: { id: string; usage: Usage; sentBy?: Principal } | undefined;
  /**
   * Whom the run belongs to (docs/tenants.md): its tenant and owner as its client set them (with
   * `auth:` on, keel serve sets them from the verified identity), handed down to sub-agents,
   * tasks and a session's turns. Empty for a run started without them.
   */
  principal: Principal;
  /** True when the run resumes an interrupted one: its first iteration only answers the held calls. */
  resuming: boolean;
  /**
   * In a run that resumes an interrupted one: the decisions (parsed as for `params.resumed`:
   * restarts, and for a kind whose holds decide stand-in outputs, the `{ respond }` answers)
   * addressed to this middleware's holds, as the framework routes them (by position; for a middleware
   * with `sharedDecision`, every instance's holds). Empty otherwise. Read it from
   * `wrapGenerate` at iteration 0 to decide before any restarted call runs.
   */
  resumedHolds: () => Decision[];
  /**
   * What this stage's `carry` hook returned in the previous run of the chain, when the run
   * continued as new (a long run moves to a fresh Temporal run at a turn boundary), parsed by
   * the middleware's `carrySchema` (a value it refuses fails the run INVALID_ARGUMENT); undefined
   * otherwise. Restore from it whatever the hooks keep that the messages do not.
   */
  carried: Carried | undefined;
  /** This middleware's position in the chain (0 = outermost). */
  stageIndex: number;
  /**
   * Holds the current tool call for a decision (call it from `wrapTool`): `data` is a JSON
   * object shown to whoever decides, checked against the data schema of the hold's kind (the
   * middleware's first declared kind unless `kind` names another). The decision comes back to
   * this stage only, parsed by the kind's decision schema, as `params.resumed` of the
   * restarted call.
   */
  interrupt: (data?: Record<string, unknown>, kind?: string) => never;
  /**
   * Holds the run before its next model call (call it from `wrapGenerate`): `data` is shown to
   * whoever decides, as for `interrupt`, and the parsed decision comes back. Undefined where a
   * run cannot wait for a decision (interruptMode 'return', a run from before this).
   */
  holdModelCall: ((data: Record<string, unknown>, kind?: string) => Promise<unknown>) | undefined;
  /**
   * State shared by every instance of this middleware in the run (the same name), made by
   * `init` on first use. Lives as long as the run; keep it JSON-plain.
   */
  shared: <T extends object>(init: () => T) => T;
}

/**
 * What the decisions on a middleware's holds come to: the output of its kinds' decision schemas;
 * `unknown` for one that declares none (its holds take any payload, handed over as sent).
 */
export type DecisionOf<Holds extends readonly HoldKind[]> = z.output<Holds[number]['decision']>;

/** A middleware: name, config schema, and the factory of its per-run hooks. */
export interface MiddlewareDefinition<
  Schema extends z.ZodType = z.ZodType,
  Carry extends z.ZodType = z.ZodType,
  Holds extends readonly HoldKind[] = readonly HoldKind[],
> {
  name: string;
  description: string;
  configSchema: Schema;
  /**
   * The kinds of hold this middleware raises (`defineHold`): what each shows, asks and accepts.
   * `context.interrupt` raises the first unless told another. None declared: holds of the
   * middleware's name take any data and hand the stage the decision's payload as sent.
   */
  holds?: Holds;
  /**
   * What the hooks' `carry` returns, as a zod schema: the next run of a long run's chain parses
   * what it gets with it (the run's input may have been written by anyone), and hands the hooks
   * its output as `context.carried`. Absent: `carried` is handed over as it came, `unknown`.
   */
  carrySchema?: Carry;
  /** Makes the run's hooks; may wait on the context's activities (e.g. a scan of the disk). */
  create(
    config: z.output<Schema>,
    context: MiddlewareContext<z.output<Carry>, DecisionOf<Holds>>,
  ): MiddlewareHooks<z.input<Carry>, DecisionOf<Holds>> | Promise<MiddlewareHooks<z.input<Carry>, DecisionOf<Holds>>>;
}
