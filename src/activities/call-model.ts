/**
 * The `callModel` activity: one model call, streamed text on the heartbeat, usage checked and
 * priced, the answer checked against the response schema and the payload limit. Node side.
 */
import type { WorkerScope } from './worker-scope';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { performance } from 'node:perf_hooks';
import { inSpan } from '../telemetry/spans';
import { outcomeOf, recordModelCall } from './metrics';
import { KeelError, toKeelError } from '../core/errors';
import { ModelResponseSchema, STREAM_DETAILS, type ModelResponse, type StreamedText } from '../core/messages';
import { checkedUsage } from '../core/usage';
import type { ModelRequest } from '../core/messages';
import type { CallModelInput } from '../core/run';
import { describeZodError } from '../core/schema-errors';
import { pricedUsage } from '../core/cost';
import { withHeartbeat } from './heartbeat';
import { NotRegisteredError } from './not-registered';
import { assertPayloadFits } from './payload-limit';
import { readModelRequest } from './read-model-request';

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

/** One model call (the `callModel` activity): the request read back from the run when it did not ride in the input, the answer checked. */
export function callModel(scope: WorkerScope, input: CallModelInput): Promise<ModelResponse> {
  const { activity, registry, client, modelRequestTimeout, limit } = scope;
  return activity(async () => {
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
}
