/**
 * The `callTool` activity (one tool call: input and output checked against the tool's schemas,
 * the tool's own failures named with where they were thrown) and `validateToolOutput` (a
 * stand-in output checked against the tool's output schema). Node side.
 */
import { InterruptRequest, type WorkerScope } from './worker-scope';
import { Context, type Info as ActivityInfo } from '@temporalio/activity';
import { performance } from 'node:perf_hooks';
import { inSpan } from '../telemetry/spans';
import { outcomeOf, recordToolCall } from './metrics';
import { KeelError, toKeelError } from '../core/errors';
import { ModelVisibleToolError } from '../core/interrupts';
import { addUsage, checkedUsage, type Usage } from '../core/usage';
import { TOOL_CALL_RESULT, type ToolCallResult } from '../core/run';
import type { CallToolInput, RefusedBefore, ValidateToolOutputInput } from '../core/run';
import { describeZodError, firstIssuePath } from '../core/schema-errors';
import { withHeartbeat } from './heartbeat';
import { InfrastructureError } from './infrastructure-error';
import { NotRegisteredError } from './not-registered';
import { assertPayloadFits, unrepresentable } from './payload-limit';
import { thrownAt } from './thrown-at';
import type { Tool } from '../define';

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
 * The hold of a call whose earlier attempt was lost (a tool with `effects: 'once'`): the question,
 * and what was lost. Answered with `{ respond: <its output> }` (it happened), `{ restart: {
 * reconcile: 'run-again' } }` (it did not: run it again) or `{ restart: { reconcile: 'stop' } }`.
 */
function reconciliation(toolName: string, input: unknown, idempotencyKey: string, attempt: number): Record<string, unknown> {
  return {
    question: `did ${toolName} happen? Its attempt ${attempt - 1} was lost mid-flight (no completion recorded). If it happened, answer with its output; if not, run it again; or stop the run`,
    keelReconcile: {
      toolName,
      input,
      idempotencyKey,
      lostAttempt: attempt - 1,
      choices: ['respond: <its output>', "restart: { reconcile: 'run-again' }", "restart: { reconcile: 'stop' }"],
    },
  };
}

/**
 * What a tool's own failure becomes: an interrupt or a model-visible error as it is, an
 * infrastructure failure for the retry policy, else an error naming where in the user's code it
 * was thrown (the model, under SoftToolErrors, sees `toolMessage` only).
 */
function toolFailure(error: unknown, toolName: string, baseDir: string | undefined): unknown {
  if (error instanceof InterruptRequest || ModelVisibleToolError.isInstance(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  // Could not reach what the tool needs (an MCP server that went away): the activity's retry policy tries again.
  if (InfrastructureError.isInstance(error)) return new InfrastructureError(`tool "${toolName}" failed: ${message}`, { toolName, toolMessage: message });
  const at = thrownAt(error, { baseDir: baseDir ?? process.cwd() });
  return new KeelError('INTERNAL', `tool "${toolName}" failed: ${message}${at ? ` (thrown at ${at})` : ''}`, {
    toolName,
    toolMessage: message,
    ...(at ? { thrownAt: at } : {}),
    ...(KeelError.isInstance(error) ? { toolStatus: error.status } : {}),
  });
}

/** A tool's output as the run records it: parsed by its output schema, null for nothing, refused (naming where) when JSON cannot carry it or it is too large. */
function checkedOutput(schema: Tool['output'], toolName: string, output: unknown, limit: WorkerScope['limit']): unknown {
  if (schema) {
    const parsed = schema.safeParse(output);
    if (!parsed.success)
      throw new KeelError('INTERNAL', `tool "${toolName}" returned output that fails its schema: ${describeZodError(parsed.error)}`, { toolName });
    output = parsed.data;
  }
  const problem = output === undefined ? undefined : unrepresentable(output);
  if (problem) throw new KeelError('INTERNAL', `tool "${toolName}" returned a value JSON cannot carry: ${problem}`, { toolName });
  assertPayloadFits(output ?? null, `the output of tool "${toolName}"`, limit);
  return output ?? null;
}

/** One tool call (the `callTool` activity): input and output checked against the tool's schemas, what it reported spent counted. */
export function callTool(scope: WorkerScope, { toolName, input, resumed, refusedBefore, principal, sentBy }: CallToolInput): Promise<ToolCallResult> {
  const { activity, registry, config, limit } = scope;
  return activity(async () => {
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
    // An earlier attempt of this call started and was lost (its worker died, it timed out): whether its effect happened is a person's to say.
    if (tool.effects === 'once' && info.attempt > 1)
      throw new InterruptRequest(reconciliation(toolName, parsedInput.data, idempotencyKeyOf(info, refusedBefore), info.attempt));
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
        principal: principal ?? {},
        ...(sentBy ? { sentBy } : {}),
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
      throw toolFailure(error, toolName, config.baseDir);
    }
    output = checkedOutput(tool.output, toolName, output, limit);
    return { result: TOOL_CALL_RESULT, output, ...(reported ? { usage: reported } : {}) } satisfies ToolCallResult;
  }, refusedBefore);
}

/** Checks a stand-in output against the tool's output schema (the `validateToolOutput` local activity). */
export function validateToolOutput(scope: WorkerScope, { toolName, output }: ValidateToolOutputInput): Promise<unknown> {
  const { activity, registry } = scope;
  return activity(async () => {
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
}
