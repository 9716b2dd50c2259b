/**
 * An in-memory harness for one middleware, so its unit test runs a hook without a dev server
 * and takes milliseconds. `testMiddleware(factory, config, options)` checks the config as the
 * runtime does (`middlewareRef`, then `instantiateMiddleware`), creates the hooks with a context
 * of fakes (fake-context.ts), and drives them: a tool call through `wrapTool` around a fake tool,
 * a decision on the hold it raised (parsed by the hold's kind through `resumption`, routed back
 * to the raising stage by `composeToolChain`, as a run does), one `wrapModel` call and one
 * `wrapGenerate` iteration. It runs no loop: a model reply's tool requests are not called.
 *
 * Imports nothing of Temporal. A hook that itself calls a Temporal workflow API (`log`,
 * `sleep`, `workflowInfo`) cannot run here: the harness fails such a call saying so.
 */
import type { z } from 'zod';
import { KeelError, RunStoppedError, ToolFailure, ownToolFailure, toKeelError } from '../core/errors';
import {
  MODEL_CALL_HOLD,
  decisionJsonSchema,
  parseDecision,
  resumption,
  undeclaredHold,
  type DecisionBody,
  type HoldKind,
  type RespondMode,
  type Resumption,
} from '../core/holds';
import { ModelVisibleToolError, TOOL_STAGE, ToolInterrupt, holdData } from '../core/interrupts';
import type { Message, ModelRequest, ModelResponse, ToolDefinition } from '../core/messages';
import type { Usage } from '../core/usage';
import { AgentSpecSchema, type AgentSpec, type MiddlewareRef } from '../core/run';
import { isToolAnswer } from '../core/tool-answer';
import { composeStage, composeToolChain, type ToolCall, type ToolRestart, type ToolRunner } from '../middleware/compose';
import { isMiddlewareFactory, middlewareRef, type MiddlewareFactory } from '../middleware/define-middleware';
import { holdKindOf, holdKinds } from '../middleware/hold-kinds';
import { registeredMiddleware } from '../features/catalog';
import { instantiateMiddleware, type MiddlewareStage, type SharedMiddlewareContext } from '../middleware/stages';
import type { ArtifactStore } from '../core/artifacts';
import type {
  ContributedTool,
  ContributedToolContext,
  GenerateOutcome,
  GenerateParams,
  MiddlewareContext,
  MiddlewareDefinition,
  MiddlewareHooks,
  ModelCallParams,
  Next,
} from '../middleware/types';
import { fakeCapabilities, type FakeCapabilities, type FakeCapabilityOptions, type RecordedModelCall } from './fake-context';

/** A decision a run resumed with, addressed to this middleware's holds; `kind` names a kind other than its first. */
export type ResumedHold = DecisionBody & { kind?: string };

/** Options of `testMiddleware`: the fakes (see `FakeCapabilityOptions`) and the run around the middleware. */
export interface MiddlewareHarnessOptions extends FakeCapabilityOptions {
  /** Fields of the agent being run (`context.agent`); default an agent of model `scripted/harness` with no tools. */
  agent?: Partial<AgentSpec>;
  /** The messages the run started with (`context.inputMessages`), and the default conversation of each driver. */
  inputMessages?: Message[];
  /** `context.session`: a turn of a server-managed agent's session (its id, what it spent before). */
  session?: MiddlewareContext['session'];
  /** `context.principal`: whom the run belongs to (default: no one). */
  principal?: MiddlewareContext['principal'];
  /**
   * Decisions of a run that resumes an interrupted one, addressed to this middleware's holds:
   * `context.resumedHolds()` gets them parsed by the kind's decision schema, as the runtime
   * parses them (a stand-in output only for a `decide` kind). Sets `resuming`.
   */
  resumedHolds?: ResumedHold[];
  /** `context.resuming`; default true when `resumedHolds` is given. */
  resuming?: boolean;
  /** `context.carried`: what the stage's `carry` returned in the previous run of a long run's chain. */
  carried?: unknown;
  /**
   * Decides a hold before a model call (`context.holdModelCall`, a Budget over its tree's limit):
   * gets the hold, returns the decision, which comes back to the hook parsed by its kind.
   * Absent: `context.holdModelCall` is undefined, as in a run that cannot wait (interruptMode 'return').
   */
  holdModelCall?: (held: HeldCall) => DecisionBody | Promise<DecisionBody>;
}

/** A held call, as a run's status shows it. */
export interface HeldCall {
  /** `i1`, `i2`, ... in the order the harness saw the holds. */
  id: string;
  kind: string;
  /** The one line a person is asked, made by the kind from the data. */
  question: string;
  /** The data the stage raised the hold with, as given. */
  data: Record<string, unknown>;
  /** JSON Schema of the decision the kind takes (status's `decision`). */
  decisionSchema: Record<string, unknown>;
  /** What a stand-in output does: answers the call, or goes to the stage to decide. */
  respond: RespondMode;
  /** The middleware that raised it, or `tool` for the tool's own question. */
  raisedBy: string;
  /** The held tool (`(next model call)` for a hold before a model call). */
  toolName: string;
  input: unknown;
}

/** What a tool call came to: its output, a hold, or an error the model sees. */
export type ToolCallOutcome =
  /** It ran (`metadata`: a `toolAnswer`'s, for its response part). */
  | { output: unknown; metadata?: Record<string, unknown>; held?: undefined; error?: undefined }
  /** A stage (or the tool) held it: decide it with `decide(held, decision)`. */
  | { held: HeldCall; output?: undefined; error?: undefined }
  /** Answered with `{ "error": message }` for the model: `toolFail`, or a tool failure `coversToolError` covers. */
  | { error: string; output?: undefined; held?: undefined };

/** A tool call to run through wrapTool. */
export interface HarnessToolCall {
  name: string;
  /** Default `{}`. */
  input?: unknown;
  ref?: string;
  /** Default 0. */
  iteration?: number;
  /** The messages of the model request that asked for the call; default `inputMessages`. */
  requestMessages?: Message[];
  /** The tool's definition as a hook sees it (`params.tool`); default one with an empty description. */
  tool?: Partial<Omit<ToolDefinition, 'name'>>;
}

/**
 * A fake tool: gets the call's input, and the call as a contributed tool does (`resumed` on a
 * restart of its own hold, `interrupt(data)` to hold it). A throw is the tool's own failure.
 */
export type FakeTool = (input: unknown, context: ContributedToolContext) => unknown;

/** A call that reached the tool. */
export interface ToolRun {
  name: string;
  input: unknown;
  /** On a restart of the tool's own hold: the decision's payload. */
  resumed?: unknown;
}

/** One middleware's hooks in a context of fakes, and ways to drive them. */
export interface MiddlewareHarness {
  /** The middleware's name. */
  readonly name: string;
  /** The hooks its `create` returned (`tools`, `systemPrompt`, `carry`, `forChildRuns`, `coversToolError`, ...). */
  readonly hooks: MiddlewareHooks;
  /** The agent its context has. */
  readonly agent: AgentSpec;
  /**
   * Runs a tool call through the middleware's `wrapTool` around `tool` (default: the tool the
   * middleware contributes by that name, else one that answers `{ ok: true }`). A failure the
   * model does not see (a run stop, a hook's error, an uncovered tool failure) rejects.
   */
  callTool(call: HarnessToolCall, tool?: FakeTool): Promise<ToolCallOutcome>;
  /**
   * Decides a held call as the runtime routes it: `{ approved, reason? }`, `{ restart, input? }`
   * or `{ respond }`, parsed by the hold's kind (`resumption`); a restart runs the call again
   * with the parsed value as `resumed` of the raising stage (stages outside it `released`). A
   * decision the kind does not take is refused with INVALID_ARGUMENT naming the field, and the
   * hold stays undecided. It answers this hold only (a `sharedDecision` kind's others are decided
   * one by one), and a stand-in output is not checked against a tool output schema.
   */
  decide(held: HeldCall | ToolCallOutcome, decision: DecisionBody): Promise<ToolCallOutcome>;
  /** Runs one model call through `wrapModel`; `next` defaults to the fake model (`options.model`). */
  callModel(call?: { model?: string; request?: ModelRequest; iteration?: number }, next?: Next<ModelCallParams, ModelResponse>): Promise<ModelResponse>;
  /**
   * Runs one iteration through `wrapGenerate`; `next` defaults to one model call (through
   * `wrapModel`, to the fake model) whose message ends the conversation.
   */
  generate(params?: Partial<GenerateParams>, next?: Next<GenerateParams, GenerateOutcome>): Promise<GenerateOutcome>;
  /** The run's usage: `options.usage`, every fake model call's, and `addUsage`'s. */
  usage(): Usage;
  /** Counts usage as if another model call of the run had spent it. */
  addUsage(usage: Usage): void;
  /** Every model call the fake model was asked, in order. */
  readonly modelCalls: readonly RecordedModelCall[];
  /** Every call that reached the tool, in order. */
  readonly toolRuns: readonly ToolRun[];
  /** Every hold raised, in order (decided ones included). */
  readonly holds: readonly HeldCall[];
  /** The run's artifacts (the store the middleware's context has). */
  readonly artifacts: ArtifactStore;
}

/** What a restart needs of a held call. */
interface PendingHold {
  interrupt: ToolInterrupt;
  call: ToolCall;
  tool: FakeTool | undefined;
  decided: boolean;
}

/** A tool's own question: any data, and the tool gets the decision's payload as sent. */
const TOOL_HOLD = undeclaredHold(TOOL_STAGE);

/** The position of the tool stage: the one middleware under test is stage 0, the tool right after it. */
const TOOL_STAGE_INDEX = 1;

/** The default fake tool. */
const ranOk: FakeTool = () => ({ ok: true });

/**
 * Makes a harness for a middleware: `await testMiddleware(spendingGate, { limit: 100 })`, or a
 * ref by registered name (`await testMiddleware(toolApproval({ allowedTools: ['search'] }))`). A
 * config the schema refuses fails as `defineAgent` and the worker fail it (INVALID_ARGUMENT
 * naming the field); an unknown name fails NOT_FOUND.
 */
export function testMiddleware<Schema extends z.ZodType>(
  middleware: MiddlewareFactory<Schema> | MiddlewareDefinition<Schema>,
  config?: z.input<Schema>,
  options?: MiddlewareHarnessOptions,
): Promise<MiddlewareHarness>;
export function testMiddleware(ref: MiddlewareRef, options?: MiddlewareHarnessOptions): Promise<MiddlewareHarness>;
export async function testMiddleware(
  subject: MiddlewareFactory | MiddlewareDefinition | MiddlewareRef,
  configOrOptions?: unknown,
  maybeOptions?: MiddlewareHarnessOptions,
): Promise<MiddlewareHarness> {
  const definition = isMiddlewareFactory(subject) ? subject.definition : isDefinition(subject) ? subject : undefined;
  const options = ((definition ? maybeOptions : configOrOptions) ?? {}) as MiddlewareHarnessOptions;
  // What `use: [myGate(config)]` does where the agent is defined; the worker checks the ref again below.
  const ref = definition ? middlewareRef(definition, configOrOptions) : (subject as MiddlewareRef);
  const registry: Readonly<Record<string, MiddlewareDefinition>> = definition ? { [definition.name]: definition } : registeredMiddleware();
  const agent = AgentSpecSchema.parse({
    name: 'harness',
    description: 'the agent of a middleware harness',
    model: 'scripted/harness',
    tools: [],
    use: [ref],
    maxTurns: 10,
    activities: { model: {}, tool: {} },
    ...options.agent,
  });
  const inputMessages = options.inputMessages ?? [];
  const fakes = fakeCapabilities(options);
  const holds: HeldCall[] = [];
  let resumedHolds: unknown[] | undefined;
  const readResumedHolds = () => (resumedHolds ??= parseResumedHolds(ref.name, holdKinds(registry[ref.name]!), options.resumedHolds ?? []));
  const context: SharedMiddlewareContext = {
    agent,
    callModel: fakes.callModel,
    activity: fakes.activity,
    artifacts: fakes.artifacts,
    usage: fakes.usage,
    inputMessages,
    session: options.session,
    principal: options.principal ?? {},
    resuming: options.resuming ?? (options.resumedHolds?.length ?? 0) > 0,
    resumedHolds: () => readResumedHolds(),
    carried: () => options.carried,
    ...(options.holdModelCall
      ? {
          holdModelCall: async (interrupt: ToolInterrupt) => {
            const held = showHold(holds, interrupt, MODEL_CALL_HOLD, { model: agent.model });
            const decided = taken(interrupt.hold, held, await options.holdModelCall!(held));
            return 'payload' in decided ? decided.payload : { respond: decided.output };
          },
        }
      : {}),
  };
  const [stage] = await outsideWorkflow(() => instantiateMiddleware([ref], context, registry));
  // A resumed decision its kind does not take fails here, not in the first hook that reads it.
  readResumedHolds();
  return new Harness(stage!, agent, holds, fakes, inputMessages);
}

/** The harness `testMiddleware` makes: one stage's hooks over the fakes, driven one call at a time (each driver works on its own too). */
class Harness implements MiddlewareHarness {
  readonly name: string;
  readonly hooks: MiddlewareHooks;
  readonly toolRuns: ToolRun[] = [];
  readonly usage: () => Usage;
  readonly addUsage: (usage: Usage) => void;
  readonly modelCalls: readonly RecordedModelCall[];
  readonly artifacts: ArtifactStore;
  private readonly pending = new WeakMap<HeldCall, PendingHold>();
  private readonly contributed: Map<string, ContributedTool>;
  private readonly modelStage: Next<ModelCallParams, ModelResponse>;

  constructor(
    stage: MiddlewareStage,
    readonly agent: AgentSpec,
    readonly holds: HeldCall[],
    fakes: FakeCapabilities,
    private readonly inputMessages: Message[],
  ) {
    ({ name: this.name, hooks: this.hooks } = stage);
    ({ usage: this.usage, addUsage: this.addUsage, modelCalls: this.modelCalls, artifacts: this.artifacts } = fakes);
    this.contributed = new Map((this.hooks.tools ?? []).map((tool) => [tool.definition.name, tool]));
    this.modelStage = composeStage([this.hooks], 'wrapModel', (params) => fakes.callModel(params.model, params.request));
  }

  readonly callTool: MiddlewareHarness['callTool'] = (
    { name, input = {}, ref, iteration = 0, requestMessages = this.inputMessages, tool: definition },
    tool,
  ) => {
    const local = this.contributed.get(name)?.definition;
    const call: ToolCall = {
      request: { name, ...(ref !== undefined ? { ref } : {}), input },
      tool: { name, description: '', inputSchema: { type: 'object' }, ...local, ...definition },
      iteration,
      requestMessages,
    };
    return this.runCall(call, tool);
  };

  readonly decide: MiddlewareHarness['decide'] = async (target, decision) => {
    const held = isHeldCall(target) ? target : target.held;
    if (!held) throw new KeelError('FAILED_PRECONDITION', `decide needs a held call; this call was not held: it answered ${JSON.stringify(target)}`);
    const entry = this.pending.get(held);
    if (!entry) throw new KeelError('NOT_FOUND', `hold ${held.id} is not a held tool call of this harness`);
    if (entry.decided) throw new KeelError('FAILED_PRECONDITION', `hold ${held.id} was already decided`);
    const value = taken(entry.interrupt.hold, held, decision);
    entry.decided = true;
    if ('output' in value) return { output: value.output };
    let { call } = entry;
    const inputReplaced = value.input !== undefined && JSON.stringify(value.input) !== JSON.stringify(call.request.input);
    if (inputReplaced) call = { ...call, originalInput: call.originalInput ?? call.request.input, request: { ...call.request, input: value.input } };
    return this.runCall(call, entry.tool, { stage: entry.interrupt.stage, payload: value.payload, inputReplaced });
  };

  readonly callModel: MiddlewareHarness['callModel'] = (
    { model = this.agent.model, request = this.requestOf(this.inputMessages), iteration = 0 } = {},
    next,
  ) => {
    const stageCall = next ? composeStage([this.hooks], 'wrapModel', next) : this.modelStage;
    return outsideWorkflow(() => stageCall({ model, request, iteration }));
  };

  readonly generate: MiddlewareHarness['generate'] = ({ iteration = 0, messages = this.inputMessages } = {}, next) => {
    const oneModelCall: Next<GenerateParams, GenerateOutcome> = async (params) => {
      const response = await this.modelStage({ model: this.agent.model, request: this.requestOf(params.messages), iteration: params.iteration });
      return { response, messages: [...params.messages, response.message] };
    };
    return outsideWorkflow(() => composeStage([this.hooks], 'wrapGenerate', next ?? oneModelCall)({ iteration, messages }));
  };

  private requestOf(messages: Message[]): ModelRequest {
    return { messages, tools: this.agent.tools, ...(this.agent.config ? { config: this.agent.config } : {}) };
  }

  /** Runs a call through wrapTool and settles it as a tool turn does. */
  private async runCall(call: ToolCall, tool: FakeTool | undefined, restart?: ToolRestart): Promise<ToolCallOutcome> {
    try {
      const value = await outsideWorkflow(() => composeToolChain([this.hooks], this.toolRunner(tool))(call, restart));
      return isToolAnswer(value) ? { output: value.output, metadata: value.metadata } : { output: value };
    } catch (error) {
      if (ModelVisibleToolError.isInstance(error)) return { error: error.message };
      if (ToolInterrupt.isInstance(error)) {
        const held = showHold(this.holds, error, call.request.name, call.request.input);
        this.pending.set(held, { interrupt: error, call, tool, decided: false });
        return { held };
      }
      if (ToolFailure.isInstance(error) && this.hooks.coversToolError?.(call.request.name)) return { error: error.modelMessage };
      throw error;
    }
  }

  /** The innermost stage: the fake tool, run as keel runs a workflow-local tool. */
  private toolRunner(fake: FakeTool | undefined): ToolRunner {
    return async (call, resumed) => {
      const name = call.request.name;
      const run = fake ?? this.contributed.get(name)?.run ?? ranOk;
      this.toolRuns.push({ name, input: call.request.input, ...(resumed !== undefined ? { resumed } : {}) });
      const interrupt = (data?: Record<string, unknown>): never => {
        throw new ToolInterrupt({ data: holdData(data), raisedBy: TOOL_STAGE, stage: TOOL_STAGE_INDEX, hold: TOOL_HOLD });
      };
      try {
        return await run(call.request.input, { ...call, interrupt, ...(resumed !== undefined ? { resumed } : {}) });
      } catch (error) {
        if (ToolInterrupt.isInstance(error) || ModelVisibleToolError.isInstance(error) || RunStoppedError.isInstance(error)) throw error;
        // The tool's own failure, as call-tool.ts makes it.
        throw ownToolFailure(toKeelError(error), name);
      }
    };
  }
}

/** Records a hold as a run's status shows it. */
function showHold(holds: HeldCall[], interrupt: ToolInterrupt, toolName: string, input: unknown): HeldCall {
  const { hold } = interrupt;
  const held: HeldCall = {
    id: `i${holds.length + 1}`,
    kind: hold.kind,
    question: hold.question(interrupt.data, { toolName }),
    data: interrupt.data,
    decisionSchema: decisionJsonSchema(hold),
    respond: hold.respond ?? 'answer',
    raisedBy: interrupt.raisedBy,
    toolName,
    input,
  };
  holds.push(held);
  return held;
}

/**
 * What a decision on `held` (a hold of kind `hold`) comes to, checked as the run's `resume`
 * update checks it: the envelope (`parseDecision`), then the kind's decision schema
 * (`resumption`); a refusal names the field.
 */
function taken(hold: HoldKind, held: HeldCall, decision: DecisionBody): Resumption {
  const parsed = parseDecision({ interruptId: held.id, ...decision });
  if (!parsed.success) throw new KeelError('INVALID_ARGUMENT', parsed.error);
  const result = resumption(hold, parsed.data, { declared: true });
  if (result.success) return result.value;
  throw new KeelError(
    'INVALID_ARGUMENT',
    `the decision for hold ${held.id} (a ${held.kind} hold on tool "${held.toolName}") is not one it takes: ${result.error}`,
  );
}

/** The payloads `options.resumedHolds` hand the stage, parsed as a resume parses them (a stand-in output only for a `decide` kind). */
function parseResumedHolds(name: string, kinds: readonly [HoldKind, ...HoldKind[]], decisions: readonly ResumedHold[]): unknown[] {
  return decisions.flatMap(({ kind, ...body }, index) => {
    const hold = holdKindOf(kinds, kind);
    if (!hold) {
      throw new KeelError(
        'INVALID_ARGUMENT',
        `options.resumedHolds[${index}] names kind "${kind}", which middleware "${name}" does not declare (it declares: ${kinds.map((declared) => declared.kind).join(', ')})`,
      );
    }
    const result = resumption(hold, body);
    if (!result.success) throw new KeelError('INVALID_ARGUMENT', `options.resumedHolds[${index}] (a ${hold.kind} hold) is not one it takes: ${result.error}`);
    return 'payload' in result.value ? [result.value.payload] : [];
  });
}

/**
 * Runs `work`, turning the error of a Temporal workflow API called outside a workflow (a hook's
 * `log.warn`, `sleep`) into one that says the harness cannot run it.
 */
async function outsideWorkflow<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof Error && error.name === 'IllegalStateError' && /workflow/i.test(error.message)) {
      throw new KeelError(
        'FAILED_PRECONDITION',
        `a hook called a Temporal workflow API, which runs only inside a workflow (${error.message}); the in-memory harness cannot run this path: test it against a dev server`,
        { cause: error.message },
      );
    }
    throw error;
  }
}

function isDefinition(value: unknown): value is MiddlewareDefinition {
  return typeof value === 'object' && value !== null && typeof (value as MiddlewareDefinition).create === 'function' && 'configSchema' in value;
}

function isHeldCall(value: HeldCall | ToolCallOutcome): value is HeldCall {
  return 'decisionSchema' in value;
}
