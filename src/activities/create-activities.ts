/**
 * The activities of a keel worker: every piece of I/O a run does. Built from a registry
 * (what the worker knows), the config (timeouts), and a Temporal client (to read a model
 * request back from its run). Errors leave as ApplicationFailure with the status as type:
 * application outcomes non-retryable, infrastructure failures (InfrastructureError: Temporal
 * could not be reached) retryable by the activity's retry policy.
 */
import { CancelledFailure, Context, type Info as ActivityInfo } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure, type Duration } from '@temporalio/common';
import { z } from 'zod';
import { performance } from 'node:perf_hooks';
import { inSpan } from '../telemetry/spans';
import { outcomeOf, recordModelCall, recordToolCall } from './metrics';
import { KeelError, toApplicationFailure, toKeelError } from '../core/errors';
import { ModelVisibleToolError, TOOL_FAIL_FAILURE, TOOL_INTERRUPT_FAILURE } from '../core/interrupts';
import { ModelResponseSchema, STREAM_DETAILS, type ModelResponse, type StreamedText } from '../core/messages';
import { addUsage, checkedUsage, type Usage } from '../core/usage';
import type { ModelRequest, ToolDefinition } from '../core/messages';
import { TOOL_CALL_RESULT, type ToolCallResult } from '../core/run';
import type { AgentSpec, CallModelInput, CallToolInput, RefusedBefore, ResolveAgentInput, ValidateToolOutputInput } from '../core/run';
import { describeZodError, firstIssuePath } from '../core/schema-errors';
import { pricedUsage } from '../core/cost';
import { modelTaskQueue } from '../core/rate-limit';
import { toInputJsonSchema } from '../core/zod-schema';
import type { KeelConfig } from '../config/schema';
import type { Agent, Tool } from '../define';
import type { Registry } from '../registry';
import { withHeartbeat } from './heartbeat';
import { InfrastructureError, toRetryableFailure } from './infrastructure-error';
import { NotRegisteredError, notRegisteredFailure } from './not-registered';
import { assertPayloadFits, inlinePayloadLimit, payloadLimit, unrepresentable } from './payload-limit';
import { temporal } from '@temporalio/proto';
import { log } from '@temporalio/activity';
import { KEEL_SEARCH_ATTRIBUTES, registerCommand } from '../core/search-attributes';
import { DEFAULT_MODEL_REQUEST_TIMEOUT, readModelRequest } from './read-model-request';
import { thrownAt } from './thrown-at';
import { invokeSession } from './invoke-session';
import { FEATURE_ACTIVITIES } from './features';
import { awaitTasks, inspectTasks } from './tasks';
import { readTreeBudget } from './tree-budget';
import type { KeelActivities } from './types';
import type { SignProofsInput, VerifyProofsInput } from '../core/proofs';
import { loadSigningKeys, type SigningKeys } from '../security/signing-keys';
import { GENERATE_WORKFLOW, SESSION_WORKFLOW } from '../workflows/definitions';

/** What the activities need. */
export interface ActivityDependencies {
  registry: Registry;
  config: Pick<KeelConfig, 'activities'> & Partial<Pick<KeelConfig, 'externalStorage' | 'security' | 'baseDir'>> & { worker?: Partial<KeelConfig['worker']> };
  /** The keys proofs are signed with; loaded from the config (KEEL_SIGNING_KEY or its key file) when absent. */
  signingKeys?: SigningKeys;
  /** Client used to read model requests back from their run. */
  client: Client;
  /** How long reading a model request back from its run may wait for an answer (default 10 s). */
  modelRequestTimeout?: Duration;
}

/** JSON schema of a zod schema, as the model sees it. */
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const json = toInputJsonSchema(schema);
  delete json.$schema;
  return json;
}

function describeTool(tool: Tool): ToolDefinition {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: jsonSchemaOf(tool.input),
    ...(tool.output ? { outputSchema: jsonSchemaOf(tool.output) } : {}),
  };
}

const INTERRUPT_REQUEST = '__keelInterruptRequest';

/** Thrown by ToolContext.interrupt; carries the hold's data out of the activity. */
class InterruptRequest extends Error {
  readonly [INTERRUPT_REQUEST] = true;
  constructor(readonly data: Record<string, unknown>) {
    super('tool asked to interrupt');
  }
}

/**
 * Runs `work`, turning any error into a non-retryable ApplicationFailure with a status,
 * except an InfrastructureError, which stays retryable for the activity's retry policy. A
 * call that was cancelled reports the SDK's CancelledFailure instead, so Temporal records a
 * cancellation (not a failure) and a workflow waiting for it can end.
 */
async function asActivity<T>(
  work: () => Promise<T>,
  { retryFor, client, refusedBefore }: { retryFor: Duration; client: Client; refusedBefore?: RefusedBefore },
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const { cancellationSignal } = Context.current();
    if (cancellationSignal.aborted && cancellationSignal.reason instanceof CancelledFailure) throw cancellationSignal.reason;
    if (NotRegisteredError.isInstance(error)) {
      const failure = await notRegisteredFailure(error, { retryFor, client, refusedBefore });
      throw failure instanceof ApplicationFailure ? failure : toApplicationFailure(failure);
    }
    if (error instanceof InterruptRequest) {
      throw ApplicationFailure.create({ type: TOOL_INTERRUPT_FAILURE, message: 'tool asked to interrupt', nonRetryable: true, details: [error.data] });
    }
    if (ModelVisibleToolError.isInstance(error)) throw ApplicationFailure.create({ type: TOOL_FAIL_FAILURE, message: error.message, nonRetryable: true });
    if (InfrastructureError.isInstance(error)) throw toRetryableFailure(error);
    if (error instanceof ApplicationFailure) throw error;
    throw toApplicationFailure(toKeelError(error));
  }
}

/**
 * True when the client's namespace has keel's search attributes (as Keyword). When it has not,
 * says once how to register them; runs then work without them. A lookup that fails (no
 * permission for the operator service) counts as absent.
 */
async function hasSearchAttributes(client: Client): Promise<boolean> {
  const namespace = client.options.namespace;
  try {
    const { customAttributes } = await client.connection.operatorService.listSearchAttributes({ namespace });
    const Keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    if (KEEL_SEARCH_ATTRIBUTES.every((name) => customAttributes?.[name] === Keyword)) return true;
  } catch {
    // Fall through: treated as not registered.
  }
  log.warn(
    `keel: the search attributes ${KEEL_SEARCH_ATTRIBUTES.join(', ')} are not registered in namespace "${namespace}", so runs cannot be listed by agent or status; register them with: npx keel namespace setup (this worker's config), or ${registerCommand(namespace)}`,
  );
  return false;
}

/**
 * A tool call's idempotency key: `<workflowId>/<temporal run id>/<activityId>`, unique over
 * every call of a run's whole chain (continue-as-new, a reused run id, a reset that runs a call
 * again) and the same on every attempt of one call, and on a call scheduled again after workers
 * lacking the tool refused all its attempts (`refusedBefore`: the first call's activity id).
 */
function idempotencyKeyOf(info: ActivityInfo, refusedBefore?: RefusedBefore): string {
  const workflowId = info.workflowExecution?.workflowId ?? 'standalone';
  const activityId = refusedBefore?.activityId ?? info.activityId;
  return `${workflowId}/${info.workflowExecution?.runId ?? 'standalone'}/${activityId}`;
}

/**
 * Refuses an activity that only keel's own workflow code may call (it signs what clients must
 * not forge) when it was not scheduled by a keel run: a standalone activity started by a client,
 * for one.
 */
function assertCalledByRun(activity: string): void {
  const { workflowType, workflowExecution } = Context.current().info;
  if (!workflowExecution?.workflowId || (workflowType !== GENERATE_WORKFLOW && workflowType !== SESSION_WORKFLOW)) {
    throw new KeelError(
      'PERMISSION_DENIED',
      `activity ${activity} runs only for keel's own runs (it was scheduled by ${workflowType ? `workflow type "${workflowType}"` : 'no workflow'})`,
    );
  }
}

/**
 * Which calls of a run of `agent` are local activities: every registered model the agent's
 * `local.models` picks (or, without it, each model that says `local`), and each of its tools
 * its `local.tools` picks (or that says `local` itself).
 */
function localCallsOf(registry: Registry, agent: Agent, tools: ToolDefinition[]): { localModels?: string[]; localTools?: string[] } {
  const models = [...registry.models.values()].filter((model) => agent.local?.models ?? model.local === true).map((model) => model.name);
  const byName = new Map(
    agent.tools.map((entry) => [typeof entry === 'string' ? entry : entry.name, typeof entry === 'string' ? registry.tools.get(entry) : entry]),
  );
  const choice = agent.local?.tools;
  const local = tools
    .map((tool) => tool.name)
    .filter((name) => (choice === undefined ? byName.get(name)?.local === true : typeof choice === 'boolean' ? choice : choice.includes(name)));
  return { ...(models.length ? { localModels: models.sort() } : {}), ...(local.length ? { localTools: local.sort() } : {}) };
}

/** The task queue of each rate-limited model's calls, beside the queue the agent was resolved on (every keel worker of it polls them). */
function modelQueuesOf(registry: Registry, taskQueue: string): { modelQueues?: Record<string, string> } {
  const limited = [...registry.models.values()].filter((model) => model.rateLimit).map((model) => model.name);
  return limited.length ? { modelQueues: Object.fromEntries(limited.sort().map((name) => [name, modelTaskQueue(taskQueue, name)])) } : {};
}

/**
 * A rate-limited model's provider answering 429 (too many requests): a retryable failure, so the
 * activity's retry policy calls again after the provider's Retry-After (or the policy's backoff)
 * instead of failing the run; its attempts (`activities.model.retry.maximumAttempts`) bound the
 * wait. Any other error is left as it is.
 */
function throttledFailure(error: unknown): unknown {
  if (!KeelError.isInstance(error) || error.status !== 'RESOURCE_EXHAUSTED' || error.details.httpStatus !== 429) return error;
  const { retryAfterMs } = error.details;
  return ApplicationFailure.create({
    type: error.status,
    message: error.message,
    nonRetryable: false,
    details: [error.details],
    ...(typeof retryAfterMs === 'number' ? { nextRetryDelay: retryAfterMs } : {}),
  });
}

/** Builds the activity implementations for one worker. */
export function createActivities({
  registry,
  config,
  client,
  signingKeys,
  modelRequestTimeout = DEFAULT_MODEL_REQUEST_TIMEOUT,
}: ActivityDependencies): KeelActivities & Record<string, (input: never) => Promise<unknown>> {
  const limit = payloadLimit(config.externalStorage);
  const inlineLimit = inlinePayloadLimit(config.externalStorage);
  const notRegisteredRetryFor = config.worker?.notRegisteredRetryFor ?? '1 minute';
  const activity = <T>(work: () => Promise<T>, refusedBefore?: RefusedBefore): Promise<T> =>
    asActivity(work, { retryFor: notRegisteredRetryFor, client, refusedBefore });
  let keys = signingKeys;
  const proofKeys = (): SigningKeys =>
    (keys ??= loadSigningKeys({ security: config.security ?? { signingKeyFile: '.keel/signing-key' }, baseDir: config.baseDir ?? process.cwd() }));
  // Whether the namespace has keel's search attributes: asked once per worker, on the first run.
  let searchAttributes: Promise<boolean> | undefined;
  const resolveAgent = ({ agent: name, refusedBefore }: ResolveAgentInput): Promise<AgentSpec> =>
    activity(async () => {
      searchAttributes ??= hasSearchAttributes(client);
      const agent = registry.agents.get(name);
      if (!agent) {
        const known = [...registry.agents.keys()].sort();
        throw new NotRegisteredError(`agent "${name}" is not registered on this worker; registered agents: ${known.join(', ') || '(none)'}`, {
          kind: 'agent',
          name,
          has: known,
        });
      }
      if (!registry.models.has(agent.model)) {
        const known = [...registry.models.keys()].sort();
        throw new NotRegisteredError(
          `model "${agent.model}" of agent "${name}" is not registered; registered models: ${known.join(', ') || '(none)'}`,
          { kind: 'model', name: agent.model, has: known },
          {
            modelName: agent.model,
          },
        );
      }
      const tools = agent.tools.map((entry) => {
        const tool = typeof entry === 'string' ? registry.tools.get(entry) : entry;
        if (!tool) {
          throw new NotRegisteredError(
            `tool "${String(entry)}" of agent "${name}" is not registered; registered tools: ${[...registry.tools.keys()].sort().join(', ') || '(none)'}`,
            { kind: 'tool', name: String(entry), has: [...registry.tools.keys()].sort() },
            {
              toolName: String(entry),
            },
          );
        }
        return describeTool(tool);
      });
      return {
        name: agent.name,
        description: agent.description,
        model: agent.model,
        ...(agent.system ? { system: agent.system } : {}),
        ...(agent.config ? { config: agent.config } : {}),
        tools,
        use: agent.use.map((ref) => ({ name: ref.name, config: ref.config ?? {} })),
        maxTurns: agent.maxTurns,
        activities: config.activities,
        models: [...registry.models.keys()].sort(),
        directory: [...registry.agents.values()]
          .map((entry) => ({ name: entry.name, description: entry.description, session: entry.session }))
          .sort((a, b) => a.name.localeCompare(b.name)),
        session: agent.session,
        ...(agent.output ? { output: agent.output } : {}),
        searchAttributes: await searchAttributes,
        ...(inlineLimit !== undefined ? { inlinePayloadLimit: inlineLimit } : {}),
        ...modelQueuesOf(registry, Context.current().info.taskQueue),
        ...localCallsOf(registry, agent, tools),
      };
    }, refusedBefore);

  const callModel = (input: CallModelInput): Promise<ModelResponse> =>
    activity(async () => {
      const context = Context.current();
      const model = registry.models.get(input.model);
      if (!model) {
        throw new NotRegisteredError(
          `model "${input.model}" is not registered on this worker; registered models: ${[...registry.models.keys()].sort().join(', ') || '(none)'}`,
          { kind: 'model', name: input.model, has: [...registry.models.keys()].sort() },
          {
            modelName: input.model,
          },
        );
      }
      const attributes = {
        'keel.run_id': input.runId,
        'keel.model': input.model,
        'gen_ai.request.model': input.model,
        'keel.attempt': context.info.attempt,
        ...(input.agent ? { 'keel.agent': input.agent } : {}),
        ...(input.turn !== undefined ? { 'keel.turn': input.turn } : {}),
      };
      const startedAt = performance.now();
      const response = await inSpan(`keel.model ${input.model}`, attributes, async (span) => {
        const answer = await withHeartbeat(async (heartbeat) => {
          const request =
            input.requestText !== undefined
              ? (JSON.parse(input.requestText) as ModelRequest)
              : await readModelRequest({ client, input, timeout: modelRequestTimeout });
          // Streamed text rides on the heartbeat (batched by its throttle, never in history): the text so far, for clients to show.
          let text = '';
          let sequence = 0;
          const stream = (delta: string): void => {
            if (!delta) return;
            text += delta;
            heartbeat({
              [STREAM_DETAILS]: {
                text,
                sequence: ++sequence,
                attempt: context.info.attempt,
                model: input.model,
                callIndex: input.callIndex,
              } satisfies StreamedText,
            });
          };
          try {
            return await model.generate(request, { callIndex: input.callIndex, runId: input.runId, heartbeat, signal: context.cancellationSignal, stream });
          } catch (error) {
            throw model.rateLimit ? throttledFailure(error) : error;
          }
        });
        // Checked here, whatever the provider: usage keel cannot count fails the call before a span, a metric or the run's
        // history records it. The cost from the model's price (recorded in history with the rest) is checked too: a price can overflow it.
        const source = { modelName: input.model };
        const usage = checkedUsage(pricedUsage(checkedUsage(answer?.usage, source), model.price), source);
        span.setAttributes({
          ...(answer?.finishReason ? { 'gen_ai.response.finish_reasons': [answer.finishReason], 'keel.finish_reason': answer.finishReason } : {}),
          ...(usage.inputTokens !== undefined ? { 'gen_ai.usage.input_tokens': usage.inputTokens } : {}),
          ...(usage.outputTokens !== undefined ? { 'gen_ai.usage.output_tokens': usage.outputTokens } : {}),
        });
        return { ...answer, usage };
      }).catch((error: unknown) => {
        recordModelCall(context.metricMeter, input.model, outcomeOf(toKeelError(error)), performance.now() - startedAt, undefined);
        throw error;
      });
      const parsed = ModelResponseSchema.safeParse(response);
      if (!parsed.success) {
        throw new KeelError('INTERNAL', `model "${input.model}" returned a malformed response: ${describeZodError(parsed.error)}`, { modelName: input.model });
      }
      const priced = parsed.data;
      recordModelCall(context.metricMeter, input.model, 'ok', performance.now() - startedAt, priced.usage);
      assertPayloadFits(priced, `the response of model "${input.model}"`, limit);
      return priced;
    }, input.refusedBefore);

  const callTool = ({ toolName, input, resumed, refusedBefore }: CallToolInput): Promise<ToolCallResult> =>
    activity(async () => {
      const context = Context.current();
      const tool = registry.tools.get(toolName);
      if (!tool) {
        throw new NotRegisteredError(
          `tool "${toolName}" is not registered on this worker`,
          { kind: 'tool', name: toolName, has: [...registry.tools.keys()].sort() },
          { toolName, availableTools: [...registry.tools.keys()].sort() },
        );
      }
      const parsedInput = tool.input.safeParse(input);
      if (!parsedInput.success) {
        throw new KeelError('INVALID_ARGUMENT', `tool "${toolName}": invalid input: ${describeZodError(parsedInput.error)}`, {
          toolName,
          path: firstIssuePath(parsedInput.error),
        });
      }
      const { info } = context;
      const runId = info.workflowExecution?.workflowId ?? 'standalone';
      let output: unknown;
      let reported: Usage | undefined;
      // The first report keel could not count: it fails the call, even if the tool caught it and went on.
      let uncountable: KeelError | undefined;
      const reportUsage = (usage: Usage): void => {
        try {
          reported = addUsage(reported ?? {}, checkedUsage(usage, { toolName }), `what tool "${toolName}" reported`);
        } catch (error) {
          uncountable ??= toKeelError(error);
          throw uncountable;
        }
      };
      try {
        const toolContext = {
          reportUsage,
          idempotencyKey: idempotencyKeyOf(info, refusedBefore),
          runId,
          attempt: info.attempt,
          signal: context.cancellationSignal,
          interrupt: (data: Record<string, unknown> = {}): never => {
            throw new InterruptRequest(data);
          },
          ...(resumed !== undefined ? { resumed } : {}),
        };
        const attributes = { 'keel.run_id': runId, 'keel.tool': toolName, 'gen_ai.tool.name': toolName, 'keel.attempt': info.attempt };
        const startedAt = performance.now();
        output = await inSpan(`keel.tool ${toolName}`, attributes, () =>
          withHeartbeat((heartbeat) => Promise.resolve(tool.run(parsedInput.data, { ...toolContext, heartbeat }))),
        ).then(
          (value) => {
            recordToolCall(context.metricMeter, toolName, uncountable?.status ?? 'ok', performance.now() - startedAt);
            if (uncountable) throw uncountable;
            return value;
          },
          (error: unknown) => {
            recordToolCall(
              context.metricMeter,
              toolName,
              error instanceof InterruptRequest ? 'interrupted' : ModelVisibleToolError.isInstance(error) ? 'tool_error' : outcomeOf(error),
              performance.now() - startedAt,
            );
            throw error;
          },
        );
      } catch (error) {
        if (context.cancellationSignal.aborted) throw error;
        if (uncountable) throw uncountable;
        if (error instanceof InterruptRequest || ModelVisibleToolError.isInstance(error)) throw error;
        const message = error instanceof Error ? error.message : String(error);
        const cause = KeelError.isInstance(error) ? { toolStatus: error.status } : {};
        // Could not reach what the tool needs (an MCP server that went away): the activity's retry policy tries again.
        if (InfrastructureError.isInstance(error)) throw new InfrastructureError(`tool "${toolName}" failed: ${message}`, { toolName, toolMessage: message });
        // Where in the user's code it threw, for whoever reads the run's error (the model, under SoftToolErrors, sees `toolMessage` only).
        const at = thrownAt(error, { baseDir: config.baseDir ?? process.cwd() });
        throw new KeelError('INTERNAL', `tool "${toolName}" failed: ${message}${at ? ` (thrown at ${at})` : ''}`, {
          toolName,
          toolMessage: message,
          ...(at ? { thrownAt: at } : {}),
          ...cause,
        });
      }
      if (tool.output) {
        const parsedOutput = tool.output.safeParse(output);
        if (!parsedOutput.success) {
          throw new KeelError('INTERNAL', `tool "${toolName}" returned output that fails its schema: ${describeZodError(parsedOutput.error)}`, { toolName });
        }
        output = parsedOutput.data;
      }
      // A tool that returns nothing answers null; anything JSON would drop or change is refused, naming where.
      const problem = output === undefined ? undefined : unrepresentable(output);
      if (problem) throw new KeelError('INTERNAL', `tool "${toolName}" returned a value JSON cannot carry: ${problem}`, { toolName });
      assertPayloadFits(output ?? null, `the output of tool "${toolName}"`, limit);
      return { result: TOOL_CALL_RESULT, output: output ?? null, ...(reported ? { usage: reported } : {}) } satisfies ToolCallResult;
    }, refusedBefore);

  const validateToolOutput = ({ toolName, output }: ValidateToolOutputInput): Promise<unknown> =>
    activity(async () => {
      const tool = registry.tools.get(toolName);
      if (!tool) throw new KeelError('NOT_FOUND', `tool "${toolName}" is not registered on this worker`, { toolName });
      if (!tool.output) return output ?? null;
      const parsed = tool.output.safeParse(output);
      if (!parsed.success) {
        throw new KeelError('INVALID_ARGUMENT', `output for tool "${toolName}" fails its schema: ${describeZodError(parsed.error)}`, {
          toolName,
          path: firstIssuePath(parsed.error),
        });
      }
      return parsed.data ?? null;
    });

  const signProofs = ({ subjects }: SignProofsInput): Promise<string[]> =>
    activity(async () => {
      assertCalledByRun('signProofs');
      return subjects.map((subject) => proofKeys().sign(subject));
    });

  const verifyProofs = ({ claims }: VerifyProofsInput): Promise<boolean[]> =>
    activity(async () => {
      assertCalledByRun('verifyProofs');
      return claims.map(({ subject, proof }) => proofKeys().verify(subject, proof));
    });

  return {
    resolveAgent,
    signProofs,
    verifyProofs,
    callModel,
    callTool,
    validateToolOutput,
    inspectTasks: (input) => activity(() => inspectTasks(client, input)),
    awaitTasks: (input) => activity(() => awaitTasks(client, input)),
    invokeSession: (input) => activity(() => invokeSession(client, input)),
    readTreeBudget: (input) => activity(() => readTreeBudget(client, input)),
    // Each feature's own activities, under their doors' names.
    ...Object.fromEntries(FEATURE_ACTIVITIES.map(({ name, call }) => [name, (input: unknown) => activity(() => call(input, { client }))])),
  };
}
