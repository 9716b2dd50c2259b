/**
 * The middleware contract. A middleware is a named factory with a zod config schema; per
 * run it creates hooks that wrap the reference's three stages: each loop iteration
 * (`wrapGenerate`, iteration 0 encloses all later ones), each model call (`wrapModel`)
 * and each tool call (`wrapTool`), plus contributions (tools, system-prompt fragments).
 * Listed first = outermost. Hooks run inside the workflow: they must be deterministic and
 * reach the outside world only through the capabilities of `MiddlewareContext`.
 */
import type { z } from 'zod';
import type { ResumeTarget } from '../core/interrupts';
import type { Message, ModelRequest, ModelResponse, ToolDefinition, ToolRequest, Usage } from '../core/messages';
import type { AgentSpec } from '../core/run';

/** One iteration of the tool loop, as `wrapGenerate` sees it. */
export interface GenerateParams {
  /** 0 for the first model call of the run. */
  iteration: number;
  /** The conversation at the start of the iteration. */
  messages: Message[];
}

/** One model call, as `wrapModel` sees it. */
export interface ModelCallParams {
  /** The model the call goes to (middleware may send it elsewhere). */
  model: string;
  request: ModelRequest;
  iteration: number;
}

/** One tool call, as `wrapTool` sees it. */
export interface ToolCallParams {
  request: ToolRequest;
  /** The tool's definition; undefined when the model asked for a tool that does not exist. */
  tool: ToolDefinition | undefined;
  iteration: number;
  /** The messages of the model request that produced this call. */
  requestMessages: Message[];
  /**
   * Set when the call is a restart of a held call: the decision's payload, for the stage that
   * raised the hold. Stages before that one already let the call through and pass it on;
   * the raising stage reads the payload and calls `next` without it.
   */
  resume?: ResumeTarget;
}

/** Continues to the next (inner) stage. */
export type Next<P, R> = (params: P) => Promise<R>;

/** Hooks one middleware instance contributes to one run. */
export interface MiddlewareHooks {
  /** Wraps each loop iteration; iteration 0 encloses all later ones. */
  wrapGenerate?: (params: GenerateParams, next: Next<GenerateParams, GenerateOutcome>) => Promise<GenerateOutcome>;
  /** Wraps each model call. */
  wrapModel?: (params: ModelCallParams, next: Next<ModelCallParams, ModelResponse>) => Promise<ModelResponse>;
  /** Wraps each tool call; resolves to the tool's output. */
  wrapTool?: (params: ToolCallParams, next: Next<ToolCallParams, unknown>) => Promise<unknown>;
  /** Tools this middleware adds to the run, with their workflow-local implementations. */
  tools?: ContributedTool[];
  /** Text appended to the system prompt. */
  systemPrompt?: string;
  /**
   * True when a failure of this tool (its own error, bad input, unknown name) should answer
   * the call as `{ error }` instead of failing the run (SoftToolErrors). Consulted after the
   * whole wrapTool chain; a run covers a failure when any middleware does.
   */
  coversToolError?: (toolName: string) => boolean;
}

/** A tool a middleware contributes; it runs inside the workflow. */
export interface ContributedTool {
  definition: ToolDefinition;
  run: (input: unknown, params: ToolCallParams) => Promise<unknown>;
}

/** What an iteration (and so the run) produced. */
export interface GenerateOutcome {
  response: ModelResponse;
}

/** What a middleware may use while it works. */
export interface MiddlewareContext {
  /** The agent being run. */
  agent: AgentSpec;
  /** Calls a model through the model activity (counted in the run's usage). */
  callModel: (model: string, request: ModelRequest) => Promise<ModelResponse>;
  /** Usage of every model call of the run so far. */
  usage: () => Usage;
  /** The messages the run started with. */
  inputMessages: readonly Message[];
  /** True when the run resumes an interrupted one (its first iteration only runs restarted tools). */
  resuming: boolean;
  /** This middleware's position in the chain (0 = outermost). */
  stageIndex: number;
  /** The name this middleware raises holds under. */
  stageName: string;
}

/** The context the loop builds once; each middleware gets it with its own stage fields. */
export type SharedMiddlewareContext = Omit<MiddlewareContext, 'stageIndex' | 'stageName'>;

/** A registered middleware: name, config schema, and the factory of its per-run hooks. */
export interface MiddlewareDefinition<Schema extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  configSchema: Schema;
  create: (config: z.output<Schema>, context: MiddlewareContext) => MiddlewareHooks;
}
