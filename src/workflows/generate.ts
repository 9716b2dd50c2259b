/**
 * generateWorkflow: one generate run, the tool loop of DESIGN §3 as a Temporal workflow.
 * Each model call and each tool call is an activity; the agent is resolved by a local
 * activity so that a changed definition never breaks replay of a run under way. A held
 * tool call waits durably for a decision (DESIGN §5), or ends the run as `interrupted`.
 *
 * Runs in the workflow sandbox: deterministic, no I/O. Everything external goes through
 * the activities proxied below.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  TimeoutFailure,
  allHandlersFinished,
  condition,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import { KeelError, fromApplicationFailure, toApplicationFailure, toKeelError } from '../core/errors';
import { TOOL_INTERRUPT_FAILURE, TOOL_STAGE, ToolInterrupt, isToolFail, type Decision, type ResumeTarget } from '../core/interrupts';
import {
  addUsage,
  messageText,
  toolRequestParts,
  type Message,
  type ModelRequest,
  type ModelResponse,
  type Part,
  type ToolDefinition,
  type ToolRequestPart,
} from '../core/messages';
import { describeZodError } from '../core/schema-errors';
import { RunInputSchema, type ActivitySpec, type AgentSpec, type RunInput, type RunResult, type RunStatus } from '../core/run';
import { composeStage } from '../middleware/compose';
import { instantiateMiddleware } from '../middleware/registry';
import { softToolErrorMessage } from '../middleware/soft-tool-errors';
import type { ContributedTool, GenerateOutcome, GenerateParams, MiddlewareHooks, ToolCallParams } from '../middleware/types';
import type { KeelActivities } from '../activities/types';
import { messagesQuery, modelRequestQuery, statusQuery } from './definitions';
import { InterruptBoard } from './interrupt-board';

const { resolveAgent, validateToolOutput } = proxyLocalActivities<KeelActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['NOT_FOUND', 'INVALID_ARGUMENT', 'INTERNAL'] },
});

/**
 * The model activity reads its request through a query, whose answer must fit one gRPC
 * message (4 MiB); keep headroom for the envelope.
 */
const MAX_MODEL_REQUEST_BYTES = 3.5 * 1024 * 1024;


/** Byte length of a string in UTF-8 (no Buffer or TextEncoder needed in the sandbox). */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      index++;
    } else bytes += 3;
  }
  return bytes;
}

/** Temporal activity options from the worker's config (carried in the resolved agent). */
function activityOptions(spec: ActivitySpec): ActivityOptions {
  return {
    startToCloseTimeout: spec.startToCloseTimeout,
    heartbeatTimeout: spec.heartbeatTimeout,
    retry: {
      initialInterval: spec.retry.initialInterval,
      backoffCoefficient: spec.retry.backoffCoefficient,
      maximumInterval: spec.retry.maximumInterval,
      maximumAttempts: spec.retry.maximumAttempts,
    },
  };
}

/**
 * Turns what an activity (or anything awaited) threw into a KeelError, keeping the status
 * that crossed the boundary. Cancellation is rethrown untouched so the run ends cancelled.
 */
function asKeelError(error: unknown, what: string): KeelError {
  if (isCancellation(error)) throw error;
  if (error instanceof ActivityFailure) {
    const cause = error.cause;
    if (cause instanceof TimeoutFailure) {
      return new KeelError('DEADLINE_EXCEEDED', `${what} timed out (${cause.timeoutType}) after all attempts`);
    }
    if (cause instanceof ApplicationFailure) return fromApplicationFailure(cause);
    if (cause instanceof CancelledFailure) throw error;
    return KeelError.unclassified(`${what} failed: ${cause?.message ?? error.message}`);
  }
  return toKeelError(error);
}

/** The payload a decision restarts a held call with, in the shape its stage reads. */
function restartPayload(decision: Decision, kind: string): Record<string, unknown> | true {
  if ('restart' in decision) return decision.restart;
  if ('respond' in decision) return { budgetApproved: false, reason: 'the hold was answered with a tool output' };
  const reason = decision.reason !== undefined ? { reason: decision.reason } : {};
  if (kind === 'approval') return { toolApproved: decision.approved, ...reason };
  if (kind === 'budget') return { budgetApproved: decision.approved, ...reason };
  return { approved: decision.approved, ...reason };
}

/** What one tool call of a turn came to. */
type CallOutcome = { output: unknown; toolError?: boolean } | { interrupt: ToolInterrupt };

/** The tool loop. */
export async function generateWorkflow(rawInput: RunInput): Promise<RunResult> {
  const info = workflowInfo();
  const status: RunStatus = {
    state: 'running',
    agent: typeof rawInput?.agent === 'string' ? rawInput.agent : '',
    turn: 0,
    usage: {},
    interrupts: [],
    messageCount: 0,
  };
  let messages: Message[] = [];
  const pendingModelRequests: Record<string, ModelRequest> = {};
  const modelCallCounts: Record<string, number> = {};
  const parsedInput = RunInputSchema.safeParse(rawInput);

  const board = new InterruptBoard({
    validateOutput: async (toolName, output) => {
      try {
        return await validateToolOutput({ toolName, output });
      } catch (error) {
        throw asKeelError(error, `validating the output for tool "${toolName}"`);
      }
    },
    onChange: () => {
      status.interrupts = board.pending();
      if (status.state === 'running' || status.state === 'waiting') status.state = status.interrupts.length ? 'waiting' : 'running';
    },
    timeout: parsedInput.success ? parsedInput.data.interruptTimeout : undefined,
    onTimeout: parsedInput.success ? parsedInput.data.onInterruptTimeout : 'deny',
  });
  setHandler(statusQuery, () => ({ ...status, messageCount: messages.length }));
  setHandler(messagesQuery, (from: number) => messages.slice(Math.max(0, from)));
  setHandler(modelRequestQuery, (key: string) => {
    const request = pendingModelRequests[key];
    if (!request) throw new Error(`no model request "${key}" is pending in run ${info.workflowId}`);
    return request;
  });

  try {
    if (!parsedInput.success) {
      throw new KeelError('INVALID_ARGUMENT', `invalid run input: ${describeZodError(parsedInput.error)}`);
    }
    const input = parsedInput.data;

    let agent: AgentSpec;
    try {
      agent = await resolveAgent({ agent: input.agent });
    } catch (error) {
      throw asKeelError(error, `resolving agent "${input.agent}"`);
    }
    const maxTurns = input.maxTurns ?? agent.maxTurns;
    if (maxTurns < 0) throw new KeelError('INVALID_ARGUMENT', `maxTurns must not be negative (got ${maxTurns})`);

    const modelOptions = activityOptions(agent.activities.model);
    const toolOptions = activityOptions(agent.activities.tool);

    /** The model activity, with the request kept in the run and passed by reference. */
    const callModel = async (model: string, request: ModelRequest): Promise<ModelResponse> => {
      const callIndex = modelCallCounts[model] ?? 0;
      modelCallCounts[model] = callIndex + 1;
      const requestKey = `${model}#${callIndex}`;
      const requestBytes = utf8Length(JSON.stringify(request));
      if (requestBytes > MAX_MODEL_REQUEST_BYTES) {
        throw new KeelError(
          'OUT_OF_RANGE',
          `the request to model "${model}" is ${(requestBytes / 1024 / 1024).toFixed(2)} MiB, over the ${(MAX_MODEL_REQUEST_BYTES / 1024 / 1024).toFixed(1)} MiB a run can hand to its model activity; shorten the conversation (ContextCompression) or the tool outputs`,
          { modelName: model, sizeBytes: requestBytes },
        );
      }
      pendingModelRequests[requestKey] = request;
      try {
        const response = await proxyActivities<KeelActivities>({ ...modelOptions, summary: `model ${model}` }).callModel({
          model,
          callIndex,
          requestKey,
          workflowId: info.workflowId,
          runId: info.runId,
        });
        status.usage = addUsage(status.usage, response.usage);
        return response;
      } catch (error) {
        throw asKeelError(error, `model "${model}"`);
      } finally {
        delete pendingModelRequests[requestKey];
      }
    };

    const resuming = input.resume !== undefined;
    const hooks: MiddlewareHooks[] = instantiateMiddleware([...agent.use, ...input.use], {
      agent,
      callModel,
      usage: () => status.usage,
      inputMessages: input.messages,
      resuming,
    });

    const contributed = new Map<string, ContributedTool>();
    const tools: ToolDefinition[] = [...agent.tools];
    const seen = new Set<string>();
    for (const tool of agent.tools) {
      if (seen.has(tool.name)) throw new KeelError('INVALID_ARGUMENT', `duplicate tool name "${tool.name}" in agent "${agent.name}"`, { toolName: tool.name });
      seen.add(tool.name);
    }
    for (const hook of hooks) {
      for (const tool of hook.tools ?? []) {
        if (seen.has(tool.definition.name)) {
          throw new KeelError('INVALID_ARGUMENT', `tool "${tool.definition.name}" is contributed by middleware but already declared elsewhere`, {
            toolName: tool.definition.name,
          });
        }
        seen.add(tool.definition.name);
        contributed.set(tool.definition.name, tool);
        tools.push(tool.definition);
      }
    }
    const toolsByName = new Map(tools.map((tool) => [tool.name, tool]));

    const systemText = [agent.system, ...hooks.map((hook) => hook.systemPrompt)].filter((text): text is string => !!text).join('\n\n');
    messages = input.messages[0]?.role === 'system' || !systemText ? [...input.messages] : [{ role: 'system', content: [{ text: systemText }] }, ...input.messages];

    const modelStage = composeStage(hooks, 'wrapModel', (params) => callModel(params.model, params.request));

    const runTool = async (params: ToolCallParams): Promise<unknown> => {
      const name = params.request.name;
      const local = contributed.get(name);
      if (local) return local.run(params.request.input, params);
      if (!params.tool) {
        throw new KeelError('NOT_FOUND', `tool "${name}" not found; available tools: ${[...toolsByName.keys()].join(', ') || '(none)'}`, {
          toolName: name,
          availableTools: [...toolsByName.keys()],
          toolOwn: true,
        });
      }
      const resumed = params.resume?.stageIndex === hooks.length ? { resumed: params.resume.payload } : {};
      try {
        return await proxyActivities<KeelActivities>({ ...toolOptions, summary: `tool ${name}` }).callTool({ toolName: name, input: params.request.input, ref: params.request.ref, ...resumed });
      } catch (error) {
        if (error instanceof ActivityFailure && error.cause instanceof ApplicationFailure && error.cause.type === TOOL_INTERRUPT_FAILURE) {
          const data = (error.cause.details?.[0] ?? {}) as Record<string, unknown>;
          throw new ToolInterrupt('tool', data, TOOL_STAGE, hooks.length);
        }
        const failure = asKeelError(error, `tool "${name}"`);
        // Marks the tool's own failure, which SoftToolErrors may turn into a response.
        throw failure.status === 'CANCELLED' ? failure : new KeelError(failure.status, failure.message, { ...failure.details, toolName: name, toolOwn: true }, failure.classified);
      }
    };
    const toolStage = composeStage(hooks, 'wrapTool', runTool);

    /**
     * Runs one tool call through the wrapTool chain. A hold waits for its decision (wait
     * mode) and restarts the call, or ends as an interrupt (return mode).
     */
    const runCall = async (part: ToolRequestPart, iteration: number, requestMessages: Message[], initialResume?: ResumeTarget): Promise<CallOutcome> => {
      let resume = initialResume;
      for (;;) {
        try {
          return { output: await toolStage({ request: part.toolRequest, tool: toolsByName.get(part.toolRequest.name), iteration, requestMessages, resume }) };
        } catch (error) {
          if (isToolFail(error)) return { output: { error: error.message }, toolError: true };
          if (!ToolInterrupt.isInstance(error)) throw error;
          if (input.interruptMode === 'return') return { interrupt: error };
          const decision = await board.hold(error, part.toolRequest);
          if ('respond' in decision && error.kind !== 'budget') return { output: decision.respond };
          resume = { raisedBy: error.raisedBy, stageIndex: error.stageIndex, payload: restartPayload(decision, error.kind) };
        }
      }
    };

    /**
     * Settles the calls of one turn: every call finishes (its result is recorded) before
     * the first failure, in request order, fails the run; covered tool failures answer
     * their call. Returns the tool message, or the turn's model message marked with its
     * interrupts (return mode).
     */
    const settleTurn = async (
      modelMessage: Message,
      calls: Array<Promise<CallOutcome>>,
      requests: ToolRequestPart[],
    ): Promise<{ toolMessage: Message } | { interrupted: Message; parts: Part[] }> => {
      const outcomes = await Promise.allSettled(calls);
      const results: CallOutcome[] = [];
      for (const [index, outcome] of outcomes.entries()) {
        const toolRequest = requests[index]!.toolRequest;
        if (outcome.status === 'fulfilled') {
          results.push(outcome.value);
          continue;
        }
        const softMessage = softToolErrorMessage(outcome.reason, toolRequest.name, hooks);
        if (softMessage === undefined) throw outcome.reason;
        results.push({ output: { error: softMessage }, toolError: true });
      }
      if (results.some((result) => 'interrupt' in result)) {
        const marked: Part[] = [];
        let position = 0;
        const content = modelMessage.content.map((part): Part => {
          if (!('toolRequest' in part)) return part;
          const result = results[position++]!;
          const metadata =
            'interrupt' in result
              ? { ...part.metadata, interrupt: Object.keys(result.interrupt.data).length ? result.interrupt.data : true, interruptedBy: result.interrupt.raisedBy }
              : { ...part.metadata, pendingOutput: result.output };
          const updated: Part = { ...part, metadata };
          if ('interrupt' in result) marked.push(updated);
          return updated;
        });
        return { interrupted: { ...modelMessage, content }, parts: marked };
      }
      const responses: Part[] = results.map((result, index) => {
        const toolRequest = requests[index]!.toolRequest;
        const output = 'output' in result ? result.output : undefined;
        return {
          toolResponse: { name: toolRequest.name, ref: toolRequest.ref, output },
          ...('toolError' in result && result.toolError ? { metadata: { toolError: true } } : {}),
        };
      });
      return { toolMessage: { role: 'tool', content: responses } };
    };

    let interruptedParts: Part[] = [];

    /** Answers the held requests of the interrupted run this one resumes (iteration 0). */
    const resumeTurn = async (): Promise<GenerateOutcome> => {
      const resume = input.resume!;
      const last = messages[messages.length - 1];
      const requests = last?.role === 'model' ? toolRequestParts(last) : [];
      if (!last || requests.length === 0) {
        throw new KeelError('FAILED_PRECONDITION', 'resume needs messages that end with a model message asking for tools');
      }
      const key = (name: string, ref: string | undefined) => `${name}#${ref ?? ''}`;
      const restarts = new Map(resume.restart.map((part) => [key(part.toolRequest.name, part.toolRequest.ref), part]));
      const responds = new Map(resume.respond.map((part) => [key(part.toolResponse.name, part.toolResponse.ref), part]));
      const stageOf = (raisedBy: unknown): number => {
        if (typeof raisedBy !== 'string' || raisedBy === TOOL_STAGE) return hooks.length;
        const index = [...agent.use, ...input.use].findIndex((ref) => ref.name === raisedBy || ref.name.endsWith(`/${raisedBy}`));
        return index < 0 ? hooks.length : index;
      };
      const calls = requests.map(async (part): Promise<CallOutcome> => {
        const id = key(part.toolRequest.name, part.toolRequest.ref);
        const restart = restarts.get(id);
        if (restart) {
          const payload = restart.metadata?.resumed;
          const target: ResumeTarget = {
            raisedBy: String(part.metadata?.interruptedBy ?? TOOL_STAGE),
            stageIndex: stageOf(part.metadata?.interruptedBy),
            payload: payload && typeof payload === 'object' ? (payload as Record<string, unknown>) : true,
          };
          return runCall({ ...part, toolRequest: { ...part.toolRequest, input: restart.toolRequest.input ?? part.toolRequest.input } }, 0, messages, target);
        }
        const respond = responds.get(id);
        if (respond) return { output: await board.validateOutputOf(part.toolRequest.name, respond.toolResponse.output) };
        if (part.metadata && 'pendingOutput' in part.metadata) return { output: part.metadata.pendingOutput };
        const heldBy = typeof part.metadata?.interruptedBy === 'string' && part.metadata.interruptedBy !== TOOL_STAGE ? ` (held by middleware "${part.metadata.interruptedBy}")` : '';
        throw new KeelError('INVALID_ARGUMENT', `unresolved tool request "${id}"${heldBy}: answer it with a restart or a respond`, { toolName: part.toolRequest.name });
      });
      const settled = await settleTurn(last, calls, requests);
      if ('interrupted' in settled) {
        interruptedParts = settled.parts;
        return { response: { message: settled.interrupted, finishReason: 'interrupted', usage: {} } };
      }
      messages = [...messages, { ...settled.toolMessage, metadata: { resumed: true } }];
      return generateStage({ iteration: 1, messages });
    };

    const iterate = async (params: GenerateParams): Promise<GenerateOutcome> => {
      if (resuming && params.iteration === 0) return resumeTurn();
      status.turn += 1;
      const request: ModelRequest = { messages: [...messages], tools, ...(agent.config ? { config: agent.config } : {}) };
      const response = await modelStage({ model: agent.model, request, iteration: params.iteration });
      const modelMessage: Message = {
        ...response.message,
        role: 'model',
        content: response.message.content.map((part, index): Part =>
          'toolRequest' in part && !part.toolRequest.ref ? { ...part, toolRequest: { ...part.toolRequest, ref: String(index) } } : part,
        ),
      };
      messages = [...messages, modelMessage];
      const requests = toolRequestParts(modelMessage);
      if (requests.length === 0) return { response: { ...response, message: modelMessage } };
      if (params.iteration + 1 > maxTurns) {
        throw new KeelError('ABORTED', `exceeded maxTurns (${maxTurns}): the model still asked for tools after ${maxTurns} tool rounds`);
      }
      const settled = await settleTurn(
        modelMessage,
        requests.map((part) => runCall(part, params.iteration, request.messages)),
        requests,
      );
      if ('interrupted' in settled) {
        interruptedParts = settled.parts;
        return { response: { ...response, message: settled.interrupted, finishReason: 'interrupted' } };
      }
      messages = [...messages, settled.toolMessage];
      return generateStage({ iteration: params.iteration + 1, messages });
    };
    const generateStage = composeStage(hooks, 'wrapGenerate', iterate);

    const outcome = await generateStage({ iteration: 0, messages });
    const finalMessage = outcome.response.message;
    // The final model message as middleware left it (budget's spent record, interrupt marks).
    if (messages.length && messages[messages.length - 1]!.role === 'model') messages = [...messages.slice(0, -1), finalMessage];
    else messages = [...messages, finalMessage];
    status.state = 'completed';
    status.finishReason = outcome.response.finishReason;
    status.text = messageText(finalMessage);
    await condition(allHandlersFinished);
    return {
      finishReason: outcome.response.finishReason,
      message: finalMessage,
      text: status.text,
      messages,
      usage: status.usage,
      turns: status.turn,
      artifacts: [],
      tasks: [],
      interrupts: interruptedParts,
    };
  } catch (error) {
    status.interrupts = [];
    const lastModelText = messageText([...messages].reverse().find((message) => message.role === 'model'));
    if (isCancellation(error)) {
      status.state = 'cancelled';
      status.finishReason = 'aborted';
      status.text = lastModelText;
      throw error;
    }
    if (error instanceof ApplicationFailure) {
      status.state = 'failed';
      status.error = { status: fromApplicationFailure(error).status, message: error.message };
      throw error;
    }
    const keelError = toKeelError(error);
    const cancelled = keelError.details.cancelledDuringBackoff === true;
    status.state = cancelled ? 'cancelled' : 'failed';
    status.error = keelError.toJSON();
    if (cancelled || keelError.details.budgetExceeded === true) {
      // Stopped rather than failed: keep the partial response.
      status.finishReason = 'aborted';
      status.text = lastModelText;
      const partial = { finishReason: 'aborted', text: lastModelText, messages, usage: status.usage, turns: status.turn };
      throw toApplicationFailure(new KeelError(keelError.status, keelError.message, { ...keelError.details, partial }, keelError.classified));
    }
    throw toApplicationFailure(keelError);
  }
}
