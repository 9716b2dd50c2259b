/**
 * generateWorkflow: one generate run, the tool loop of DESIGN §3 as a Temporal workflow.
 * Each model call and each tool call is an activity; the agent is resolved by a local
 * activity so that a changed definition never breaks replay of a run under way.
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
import {
  addUsage,
  messageText,
  toolRequestParts,
  type Message,
  type ModelRequest,
  type ModelResponse,
  type Part,
  type ToolDefinition,
} from '../core/messages';
import { describeZodError } from '../core/schema-errors';
import {
  RunInputSchema,
  type ActivitySpec,
  type AgentSpec,
  type RunInput,
  type RunResult,
  type RunStatus,
} from '../core/run';
import { composeStage } from '../middleware/compose';
import { instantiateMiddleware } from '../middleware/registry';
import { softToolErrorMessage } from '../middleware/soft-tool-errors';
import type { ContributedTool, GenerateOutcome, GenerateParams, MiddlewareHooks, ToolCallParams } from '../middleware/types';
import type { KeelActivities } from '../activities/types';
import { messagesQuery, modelRequestQuery, statusQuery } from './definitions';

const { resolveAgent } = proxyLocalActivities<KeelActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['NOT_FOUND', 'INVALID_ARGUMENT'] },
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

/** Ends the workflow with a typed, non-retryable failure (never a retried workflow task). */
function failRun(error: KeelError): never {
  throw toApplicationFailure(error);
}

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

  setHandler(statusQuery, () => ({ ...status, messageCount: messages.length }));
  setHandler(messagesQuery, (from: number) => messages.slice(Math.max(0, from)));
  setHandler(modelRequestQuery, (key: string) => {
    const request = pendingModelRequests[key];
    if (!request) throw new Error(`no model request "${key}" is pending in run ${info.workflowId}`);
    return request;
  });

  try {
    const parsed = RunInputSchema.safeParse(rawInput);
    if (!parsed.success) {
      throw new KeelError('INVALID_ARGUMENT', `invalid run input: ${describeZodError(parsed.error)}`);
    }
    const input = parsed.data;

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

    const hooks: MiddlewareHooks[] = instantiateMiddleware([...agent.use, ...input.use], { agent, callModel });

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
      try {
        return await proxyActivities<KeelActivities>({ ...toolOptions, summary: `tool ${name}` }).callTool({ toolName: name, input: params.request.input, ref: params.request.ref });
      } catch (error) {
        const failure = asKeelError(error, `tool "${name}"`);
        // Marks the tool's own failure, which SoftToolErrors may turn into a response.
        throw failure.status === 'CANCELLED' ? failure : new KeelError(failure.status, failure.message, { ...failure.details, toolName: name, toolOwn: true }, failure.classified);
      }
    };
    const toolStage = composeStage(hooks, 'wrapTool', runTool);

    const iterate = async (params: GenerateParams): Promise<GenerateOutcome> => {
      status.turn = params.iteration + 1;
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

      // The calls of one turn run concurrently; every call is allowed to finish (its result
      // is recorded) before the first failure, in request order, fails the run.
      const outcomes = await Promise.allSettled(
        requests.map((part) =>
          toolStage({ request: part.toolRequest, tool: toolsByName.get(part.toolRequest.name), iteration: params.iteration, requestMessages: request.messages }),
        ),
      );
      const responses: Part[] = [];
      for (const [index, outcome] of outcomes.entries()) {
        const toolRequest = requests[index]!.toolRequest;
        if (outcome.status === 'fulfilled') {
          responses.push({ toolResponse: { name: toolRequest.name, ref: toolRequest.ref, output: outcome.value } });
          continue;
        }
        const softMessage = softToolErrorMessage(outcome.reason, toolRequest.name, hooks);
        if (softMessage === undefined) throw outcome.reason;
        responses.push({ toolResponse: { name: toolRequest.name, ref: toolRequest.ref, output: { error: softMessage } }, metadata: { toolError: true } });
      }
      messages = [...messages, { role: 'tool', content: responses }];
      return generateStage({ iteration: params.iteration + 1, messages });
    };
    const generateStage = composeStage(hooks, 'wrapGenerate', iterate);

    const outcome = await generateStage({ iteration: 0, messages });
    const finalMessage = outcome.response.message;
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
    };
  } catch (error) {
    if (isCancellation(error)) {
      status.state = 'cancelled';
      status.finishReason = 'aborted';
      status.text = messageText([...messages].reverse().find((message) => message.role === 'model'));
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
    if (cancelled) status.finishReason = 'aborted';
    status.error = keelError.toJSON();
    failRun(keelError);
  }
}
