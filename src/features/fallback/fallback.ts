/**
 * Fallback (reference: genkit-middleware/fallback): when a model call fails with an
 * eligible status, the same request goes to the next model, each with its own config.
 * A model that failed with a lasting status is skipped for the rest of the run. Runs in
 * the workflow; each fallback call is its own model activity, named in the history.
 */
import { isCancellation, log } from '@temporalio/workflow';
import { z } from 'zod';
import { KeelError, toKeelError } from '../../core/errors';
import { StatusNameSchema, type StatusName } from '../../core/status';
import { defineMiddleware } from '../../middleware/define-middleware';
import { ModelRefSchema } from '../../core/messages';

/** Statuses that fall over by default. */
export const DEFAULT_FALLBACK_STATUSES: readonly StatusName[] = [
  'UNAVAILABLE',
  'DEADLINE_EXCEEDED',
  'RESOURCE_EXHAUSTED',
  'ABORTED',
  'INTERNAL',
  'NOT_FOUND',
  'UNIMPLEMENTED',
];

/** Statuses that do not clear up between calls: such a model is skipped for the rest of the run. */
export const LASTING_STATUSES: readonly StatusName[] = ['NOT_FOUND', 'PERMISSION_DENIED', 'UNAUTHENTICATED', 'INVALID_ARGUMENT', 'UNIMPLEMENTED'];

/** Fallback's config. */
export const FallbackConfigSchema = z
  .object({
    /** Models tried in order after the primary fails. */
    models: z.array(ModelRefSchema).default([]),
    /** Classified errors with these statuses fall over; unclassified errors never do. */
    statuses: z.array(StatusNameSchema).optional(),
  })
  .strict();
export type FallbackConfig = z.input<typeof FallbackConfigSchema>;

/** Fallback: `use: [fallback({ models: ['openai/gpt-4o-mini', { name: 'anthropic/claude', config: {...} }] })]` */
export const fallback = defineMiddleware({
  name: 'fallback',
  description: 'Tries the next model when a model call fails with an eligible status.',
  configSchema: FallbackConfigSchema,
  // Lasting failures (a model that is gone) stay remembered in the next run of a long run's chain.
  carrySchema: z.record(z.string(), z.object({ status: StatusNameSchema, message: z.string() })),
  create(config, context) {
    const statuses = config.statuses?.length ? config.statuses : DEFAULT_FALLBACK_STATUSES;
    const failed = new Map<string, unknown>(Object.entries(context.carried ?? {}).map(([model, error]) => [model, new KeelError(error.status, error.message)]));
    /** True when the error lets the chain go on to the next model; records lasting failures. */
    const eligible = (model: string, error: unknown): boolean => {
      if (isCancellation(error)) return false;
      const failure = toKeelError(error);
      if (!failure.classified || !statuses.includes(failure.status)) return false;
      if (LASTING_STATUSES.includes(failure.status)) failed.set(model, error);
      return true;
    };
    return {
      carry: () => Object.fromEntries([...failed].map(([model, error]) => [model, { status: toKeelError(error).status, message: toKeelError(error).message }])),
      async wrapModel(params, next) {
        let lastError: unknown;
        let lastModel = params.model;
        // Warn only when a model failed on this call, not when a remembered failure is skipped.
        let failedNow = false;
        if (failed.has(params.model)) {
          lastError = failed.get(params.model);
        } else {
          try {
            return await next(params);
          } catch (error) {
            if (!eligible(params.model, error)) throw error;
            lastError = error;
            failedNow = true;
          }
        }
        for (const ref of config.models) {
          if (failed.has(ref.name)) continue;
          if (context.agent.models && !context.agent.models.includes(ref.name)) {
            throw new KeelError('NOT_FOUND', `fallback: model "${ref.name}" not found`, { modelName: ref.name });
          }
          if (failedNow) log.warn('model call failed, falling back', { model: lastModel, fallbackModel: ref.name });
          try {
            return await context.callModel(ref.name, { ...params.request, config: ref.config });
          } catch (error) {
            if (!eligible(ref.name, error)) throw error;
            lastError = error;
            lastModel = ref.name;
            failedNow = true;
          }
        }
        throw lastError;
      },
    };
  },
});
