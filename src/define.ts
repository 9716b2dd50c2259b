/**
 * The public way to declare tools, agents and models in code. Definitions are plain
 * objects tagged with `kind`; a worker registers every one a configured module exports.
 * Node side: tools and models run in activities, never in the workflow.
 */
import { z } from 'zod';
import type { ModelRequest, ModelResponse } from './core/messages';
import type { Usage } from './core/usage';
import type { Principal } from './core/principal';
import { OutputSpecSchema, outputValidator, type JsonSchemaObject, type OutputSpec } from './core/output';
import type { MiddlewareRefInput } from './core/run';
import type { ModelPrice } from './core/cost';
import { ApproverRulesSchema } from './core/approvers';
import { describeZodError } from './core/schema-errors';
import type { ModelRateLimit } from './core/rate-limit';
import { zod3Refusal, zodSchemaKind } from './core/zod-schema';
import { installedZodVersion } from './node/zod-version';

/** What a tool's `run` receives besides its input. */
export interface ToolContext {
  /**
   * The same on every attempt of this call (after a worker crash too) and different for every
   * other call, across the run's whole chain (continue-as-new, session runs, sub-agents, a reused
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
  /**
   * Whom the run belongs to (docs/tenants.md): its tenant and owner, as its client set them (keel
   * serve: from the verified identity). Act for them, with their own credentials, not for
   * whoever runs the worker. Empty for a run started without them.
   */
  principal: Principal;
  /** In a session's turn: who sent it, when its client said (a session may be shared). */
  sentBy?: Principal;
  /**
   * Reports what this call spent (a paid API's `cost` in USD, tokens of a model it called):
   * added to the run's usage, its tree's and its session's, and counted by Budget like a model
   * call's. Reports add up; what an attempt that fails reported is not counted. Each field must
   * be a finite number, not negative, at most 2^53 - 1 (`cost`: about 9 million USD); a report
   * that is not, or whose sum would pass that, throws and fails the call DATA_LOSS, even if the
   * tool catches it.
   */
  reportUsage: (usage: Usage) => void;
}

/** A tool that keel can run as an activity. */
export interface Tool<Input extends z.ZodType = z.ZodType, Output extends z.ZodType = z.ZodType> {
  readonly kind: 'tool';
  readonly name: string;
  readonly description: string;
  readonly input: Input;
  readonly output?: Output;
  readonly run: (input: z.output<Input>, context: ToolContext) => Promise<z.input<Output>> | z.input<Output>;
  /**
   * Run each call as a Temporal local activity, in the worker that runs the run's workflow task,
   * instead of through the task queue: for quick tools (milliseconds, no side effect a second
   * run would repeat badly). docs/local-calls.md says what differs.
   */
  readonly local?: boolean;
  /**
   * `once`: a side effect nothing on the other side can deduplicate (a charge, an email). When
   * an attempt of a call was lost mid-flight (its worker died after it started, and no completion
   * was recorded), the call is not run again blindly: the run holds it and asks a person whether
   * it happened (docs/holds.md, "Side effects that happen once"). Never a local activity.
   */
  readonly effects?: 'once';
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
  if (options.effects !== undefined && options.effects !== 'once') throw new TypeError(`${where}: effects must be 'once' when given`);
  // A local activity lost with its worker starts again at its first attempt: nothing would say an attempt was lost.
  if (options.effects === 'once' && options.local)
    throw new TypeError(`${where}: a tool with effects: 'once' cannot be local (a lost local attempt is run again unseen)`);
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

/** A zod 4 schema (a `zod/v4` one of zod 3.25+ included). */
function isZodSchema(value: unknown): value is z.ZodType {
  return zodSchemaKind(value) === 'zod4';
}

/** An agent: a model, a system prompt, tools and middleware; `Output` is the type of its structured answer (`unknown` without one). */
export interface Agent<Output = unknown> {
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
   * Who keeps the agent's conversation between runs: `client` (default) sends it with each
   * run and gets it back; `server` keeps it in a session workflow per session id.
   */
  readonly session: AgentSessionMode;
  /** The answer the agent gives: one JSON value matching this JSON Schema, in `result.output` (absent: text). */
  readonly output?: OutputSpec;
  /** Which of its calls run as local activities (docs/local-calls.md); absent: as each model and tool says. */
  readonly local?: AgentLocalCalls;
  /** Who may decide its holds, by tool name (`'*'`: any hold): `group:<name>` or `user:<subject>` of a verified identity (docs/auth.md). */
  readonly approvers?: Approvers;
  /** Type-level only (never set): the type of `result.output`, so a client given the agent types it. */
  readonly '~output'?: Output;
}

/**
 * An agent's structured answer: a zod schema, or `{ schema, retries?, name? }` where `schema`
 * is a zod schema or a JSON Schema, `retries` how many times the model gets the validation
 * error and tries again (default 2), and `name` what the provider is told the schema is called.
 */
export type AgentOutputOption<Schema extends z.ZodType = z.ZodType> = Schema | { schema: Schema | JsonSchemaObject; retries?: number; name?: string };

/**
 * An agent's choice of local activities (docs/local-calls.md): `models` true runs every model
 * call of its runs locally, false none, absent as each model says (`Model.local`); `tools` true
 * runs every activity tool locally, a list those tools, false none, absent as each tool says.
 */
export interface AgentLocalCalls {
  models?: boolean;
  tools?: boolean | ReadonlyArray<string>;
}

/**
 * Approver rules: for each tool name (or `'*'`, every hold of the agent), who may decide its
 * holds: `group:<name>` (a group of the verified identity's `groups` claim) or `user:<subject>`,
 * or `{ approvers, quorum?, escalateAfter?, escalateTo?, notRequester?, distinctGroups? }`.
 * A decision for such a hold is taken only with a proof, signed by a keel server with auth on,
 * of an identity a rule names (docs/auth.md).
 */
export type Approvers = Readonly<
  Record<
    string,
    | ReadonlyArray<string>
    | {
        readonly approvers: ReadonlyArray<string>;
        /** How many distinct verified people must approve (default 1); one denial denies. */
        readonly quorum?: number;
        /** After this long undecided (e.g. '4h'), `escalateTo` may decide as well, one of them alone. */
        readonly escalateAfter?: string;
        readonly escalateTo?: ReadonlyArray<string>;
        /** The run's owner and the turn's sender may not vote. */
        readonly notRequester?: boolean;
        /** Each approval counted comes through another entry of `approvers`. */
        readonly distinctGroups?: boolean;
      }
  >
>;

/** Who keeps an agent's conversation between runs. */
export type AgentSessionMode = 'client' | 'server';

/** Options of `defineAgent`; `tools`, `use`, `maxTurns` (5) and `output` are optional. */
export interface AgentOptions<Schema extends z.ZodType = z.ZodType> {
  name: string;
  description?: string;
  model: string;
  system?: string;
  config?: Record<string, unknown>;
  tools?: ReadonlyArray<Tool | string>;
  use?: ReadonlyArray<MiddlewareRefInput>;
  maxTurns?: number;
  session?: AgentSessionMode;
  /** The structured answer: a zod schema (or `{ schema, retries?, name? }`); the result's `output` is typed from it. */
  output?: AgentOutputOption<Schema>;
  /** Which calls run as local activities (docs/local-calls.md). */
  local?: AgentLocalCalls;
  /** Who may decide its holds, by tool name (docs/auth.md). */
  approvers?: Approvers;
}

/** Declares an agent; with `output`, its runs answer one value of that schema (`result.output`). */
export function defineAgent<Schema extends z.ZodType = z.ZodType>({
  name,
  description = '',
  model,
  system,
  config,
  tools = [],
  use = [],
  maxTurns = 5,
  session = 'client',
  output,
  local,
  approvers,
}: AgentOptions<Schema>): Agent<z.output<Schema>> {
  const spec = output === undefined ? undefined : outputSpecFrom(`defineAgent(${JSON.stringify(name)})`, output);
  if (local) checkLocalCalls(`defineAgent(${JSON.stringify(name)})`, local, tools);
  return {
    kind: 'agent',
    name,
    description,
    model,
    system,
    config,
    tools,
    use,
    maxTurns,
    session,
    ...(spec ? { output: spec } : {}),
    ...(local ? { local } : {}),
    ...(approvers ? { approvers: approverRules(`defineAgent(${JSON.stringify(name)})`, approvers) } : {}),
  };
}

/** Approver rules as temporal.yaml takes them (one schema for both). */
function approverRules(where: string, approvers: Approvers): Approvers {
  const parsed = ApproverRulesSchema.safeParse(approvers);
  if (!parsed.success) throw new TypeError(`${where}: ${describeZodError(parsed.error, 'approvers')}`);
  return approvers;
}

/** An agent's `local` names only tools it has. */
function checkLocalCalls(where: string, local: AgentLocalCalls, tools: ReadonlyArray<Tool | string>): void {
  if (local.models !== undefined && typeof local.models !== 'boolean') throw new TypeError(`${where}: local.models must be true or false`);
  if (local.tools === undefined || typeof local.tools === 'boolean') return;
  const chosen: unknown = local.tools;
  if (!Array.isArray(chosen)) throw new TypeError(`${where}: local.tools must be true, false or a list of the agent's tool names`);
  const names = tools.map((tool) => (typeof tool === 'string' ? tool : tool.name));
  for (const [index, toolName] of (chosen as unknown[]).entries()) {
    if (typeof toolName !== 'string') throw new TypeError(`${where}: local.tools[${index}] must be a tool name`);
    if (!names.includes(toolName))
      throw new TypeError(`${where}: local.tools[${index}]: "${toolName}" is not one of the agent's tools (${names.join(', ') || 'it has none'})`);
  }
}

/** The JSON Schema form of an agent's output option; throws naming what is wrong. */
function outputSpecFrom(where: string, option: AgentOutputOption): OutputSpec {
  if (zodSchemaKind(option) === 'zod3') checkSchema(option, `${where}.output`, '');
  const wrapped = isZodSchema(option) ? { schema: option } : option;
  if (typeof wrapped !== 'object' || wrapped === null || !('schema' in wrapped)) {
    throw new TypeError(`${where}: output must be a zod schema or { schema, retries?, name? }`);
  }
  let schema: JsonSchemaObject;
  if (zodSchemaKind(wrapped.schema) === 'zod3') checkSchema(wrapped.schema, `${where}.output`, '');
  if (isZodSchema(wrapped.schema)) {
    try {
      schema = z.toJSONSchema(wrapped.schema);
    } catch (error) {
      throw new TypeError(`${where}: output schema has no JSON Schema (${(error as Error).message}); transforms and custom types cannot be sent to a model`);
    }
  } else {
    schema = wrapped.schema;
  }
  const parsed = OutputSpecSchema.safeParse({ ...wrapped, schema });
  if (!parsed.success)
    throw new TypeError(`${where}: output ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')}`);
  try {
    outputValidator(parsed.data.schema);
  } catch (error) {
    throw new TypeError(`${where}: ${(error as Error).message}`);
  }
  return parsed.data;
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
  /** USD per million tokens: each call's usage then carries `cost` (unless the model reported one). */
  readonly price?: ModelPrice;
  /** Calls go to a task queue of their own, rate-limited by Temporal across workers (docs/cost.md, "Rate limits"). */
  readonly rateLimit?: ModelRateLimit;
  /**
   * Run each call as a Temporal local activity, in the worker that runs the run's workflow task,
   * instead of through the task queue (docs/local-calls.md); an agent's `local.models` overrides it.
   */
  readonly local?: boolean;
}

/** Declares a model. Throw `KeelError` with a status for failures Retry/Fallback should see. */
export function defineModel(options: Omit<Model, 'kind'>): Model {
  return { kind: 'model', ...options };
}
