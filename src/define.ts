/**
 * The public way to declare tools, agents and models in code. Definitions are plain
 * objects tagged with `kind`; a worker registers every one a configured module exports.
 * Node side: tools and models run in activities, never in the workflow.
 */
import type { z } from 'zod';
import type { ModelRequest, ModelResponse } from './core/messages';
import type { MiddlewareRefInput } from './core/run';
import { zod3Refusal, zodSchemaKind } from './core/zod-schema';
import { installedZodVersion } from './node/zod-version';

/** What a tool's `run` receives besides its input. */
export interface ToolContext {
  /**
   * The same on every attempt of this call (after a worker crash too) and different for every
   * other call, across the run's whole chain (continue-as-new, session turns, sub-agents, a reused
   * run id, a reset): dedupe side effects on it. Opaque; today `<runId>/<temporal run id>/<activityId>`.
   */
  idempotencyKey: string;
  /** The run (workflow id) this call belongs to. */
  runId: string;
  /** 1 for the first attempt of this call, 2 after a retry, ... */
  attempt: number;
  /** Reports liveness (keel also heartbeats on the tool's behalf while it runs). */
  heartbeat: (details?: unknown) => void;
  /** Aborted when the run is cancelled or the call timed out. */
  signal: AbortSignal;
  /**
   * Holds this call for a decision, with JSON data for whoever decides (a question, a
   * preview). The run pauses (or ends `interrupted`); a restart runs the tool again with
   * the decision's payload in `resumed`, a respond answers the call without running it.
   */
  interrupt: (data?: Record<string, unknown>) => never;
  /** On a restart of this call's own interrupt: the decision's payload (`true` for a bare restart). */
  resumed?: unknown;
}

/** A tool that keel can run as an activity. */
export interface Tool<Input extends z.ZodType = z.ZodType, Output extends z.ZodType = z.ZodType> {
  readonly kind: 'tool';
  readonly name: string;
  readonly description: string;
  readonly input: Input;
  readonly output?: Output;
  readonly run: (input: z.output<Input>, context: ToolContext) => Promise<z.input<Output>> | z.input<Output>;
}

/** Options of `defineTool`. */
export type ToolOptions<Input extends z.ZodType, Output extends z.ZodType> = Omit<Tool<Input, Output>, 'kind'>;

/** Declares a tool: zod input (and optional output) schema and an async `run`. */
export function defineTool<Input extends z.ZodType, Output extends z.ZodType = z.ZodType>(options: ToolOptions<Input, Output>): Tool<Input, Output> {
  // Plain JavaScript modules get no type check: say what is wrong with the definition now, not at the first call.
  const name = typeof options?.name === 'string' && options.name ? options.name : undefined;
  const where = `defineTool(${name ? JSON.stringify(name) : '...'})`;
  if (!name) throw new TypeError(`${where}: name must be a non-empty string`);
  if (typeof options.description !== 'string') throw new TypeError(`${where}: description must be a string`);
  checkSchema(options.input, `tool "${name}".input`, `${where}: input must be a zod schema, e.g. z.object({})`);
  if (options.output !== undefined) checkSchema(options.output, `tool "${name}".output`, `${where}: output must be a zod schema when given`);
  if (typeof options.run !== 'function') throw new TypeError(`${where}: run must be a function`);
  return { kind: 'tool', ...options };
}

/** A zod 4 schema passes; a zod 3 one is refused naming the installed zod (when it is a 3.x), anything else with `otherwise`. */
function checkSchema(value: unknown, where: string, otherwise: string): void {
  const kind = zodSchemaKind(value);
  if (kind === 'zod4') return;
  if (kind === 'zod3') {
    const version = installedZodVersion();
    throw new TypeError(zod3Refusal(where, version?.startsWith('3.') ? version : undefined));
  }
  throw new TypeError(otherwise);
}

/** An agent: a model, a system prompt, tools and middleware. */
export interface Agent {
  readonly kind: 'agent';
  readonly name: string;
  readonly description: string;
  /** Registered model name, e.g. `scripted/helper` or `openai/gpt-4o-mini`. */
  readonly model: string;
  readonly system?: string;
  /** Model config sent with every request (temperature, maxOutputTokens, ...). */
  readonly config?: Record<string, unknown>;
  /** Tools by object or by registered name. */
  readonly tools: ReadonlyArray<Tool | string>;
  /** Middleware, outermost first. */
  readonly use: ReadonlyArray<MiddlewareRefInput>;
  /** Tool rounds allowed before the run fails with ABORTED. */
  readonly maxTurns: number;
  /**
   * Who keeps the agent's conversation between turns: `client` (default) sends it with each
   * run and gets it back; `server` keeps it in a session workflow per session id.
   */
  readonly session: AgentSessionMode;
}

/** Who keeps an agent's conversation between turns. */
export type AgentSessionMode = 'client' | 'server';

/** Options of `defineAgent`; `tools`, `use` and `maxTurns` (5) are optional. */
export interface AgentOptions {
  name: string;
  description?: string;
  model: string;
  system?: string;
  config?: Record<string, unknown>;
  tools?: ReadonlyArray<Tool | string>;
  use?: ReadonlyArray<MiddlewareRefInput>;
  maxTurns?: number;
  session?: AgentSessionMode;
}

/** Declares an agent. */
export function defineAgent({ name, description = '', model, system, config, tools = [], use = [], maxTurns = 5, session = 'client' }: AgentOptions): Agent {
  return { kind: 'agent', name, description, model, system, config, tools, use, maxTurns, session };
}

/** What a model's `generate` receives besides the request. */
export interface ModelContext {
  /** How many calls this run made to this model before this one (0 for the first). */
  callIndex: number;
  /** The run (workflow id) this call belongs to. */
  runId: string;
  /** Reports liveness while a response streams. */
  heartbeat: (details?: unknown) => void;
  /**
   * Hands on a piece of the response's text as it arrives, for clients to show while the call
   * goes on (`keel run`, `RunHandle.events()`). Optional for a provider: the final response
   * is what the run records either way.
   */
  stream?: (textDelta: string) => void;
  /** Aborted when the run is cancelled or the call timed out. */
  signal: AbortSignal;
}

/** A model provider instance under a registered name. */
export interface Model {
  readonly kind: 'model';
  readonly name: string;
  readonly generate: (request: ModelRequest, context: ModelContext) => Promise<ModelResponse>;
}

/** Declares a model. Throw `KeelError` with a status for failures Retry/Fallback should see. */
export function defineModel(options: Omit<Model, 'kind'>): Model {
  return { kind: 'model', ...options };
}
