/**
 * Budget (reference: genkit-middleware-exp/budget): caps what a run may spend (tokens,
 * custom counters such as cost). Checked before every model call of the run, outside
 * Retry and Fallback; over the limit the run stops ABORTED with finish reason `aborted`,
 * keeping its partial response. With `interrupt`, the next tool calls are held instead and
 * one decision answers them all: approval renews the count, refusal stops the run. Every
 * model call of the run counts (the loop's, a judge's). Runs in the workflow.
 */
import { z } from 'zod';
import { KeelError } from '../core/errors';
import { ToolInterrupt } from '../core/interrupts';
import type { Message, Usage } from '../core/messages';
import type { MiddlewareRef } from '../core/run';
import { middlewareRef } from './middleware-ref';
import type { MiddlewareDefinition } from './types';

/** Metadata key of the spent record on a run's final message (the reference's, for portability). */
export const BUDGET_METADATA_KEY = 'genkit-middleware-exp/budget';

const Cap = z.number().min(0, 'must not be negative');

/** Budget's config. */
export const BudgetConfigSchema = z
  .object({
    /** Each non-zero field is a cap; `custom` key by key. */
    limit: z
      .object({
        inputTokens: Cap.optional(),
        outputTokens: Cap.optional(),
        totalTokens: Cap.optional(),
        thoughtsTokens: Cap.optional(),
        cachedContentTokens: Cap.optional(),
        custom: z.record(z.string(), Cap).optional(),
      })
      .strict(),
    /** What the limit counts: this run (default) or the agent session. */
    scope: z.enum(['run', 'session']).default('run'),
    /** Hold the next tool calls for approval instead of stopping the run. */
    interrupt: z.boolean().default(false),
  })
  .strict()
  .superRefine((config, issues) => {
    if (Object.keys(flatten(config.limit)).length === 0) issues.addIssue({ code: 'custom', path: ['limit'], message: 'set at least one field of limit' });
    if (config.scope === 'session' && config.interrupt) {
      issues.addIssue({ code: 'custom', path: ['interrupt'], message: 'a session-scoped budget cannot interrupt: a later turn would start over its limit with nothing to hold' });
    }
  });
export type BudgetConfig = z.input<typeof BudgetConfigSchema>;

/** Usage as `{ field: n }`, custom keys as `custom.<key>`, non-zero fields only. */
export function flatten(usage: Usage): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(usage)) {
    if (key === 'custom' && value && typeof value === 'object') {
      for (const [custom, amount] of Object.entries(value as Record<string, number>)) if (amount) out[`custom.${custom}`] = amount;
    } else if (typeof value === 'number' && value) out[key] = value;
  }
  return out;
}

function subtract(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = { ...a };
  for (const [key, value] of Object.entries(b)) out[key] = (out[key] ?? 0) - value;
  return out;
}

function add(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = { ...a };
  for (const [key, value] of Object.entries(b)) out[key] = (out[key] ?? 0) + value;
  return out;
}

/** The spent record a run left on its final message, if the messages end with one. */
export function recordedSpent(messages: readonly Message[]): Record<string, number> | undefined {
  const last = [...messages].reverse().find((message) => message.role === 'model');
  const record = last?.metadata?.[BUDGET_METADATA_KEY] as { spent?: Usage } | undefined;
  return record?.spent ? flatten(record.spent) : undefined;
}

/** The run stopped over its budget (status ABORTED). */
export function budgetExceeded(message: string): KeelError {
  return new KeelError('ABORTED', `budget: ${message}`, { budgetExceeded: true });
}

const BudgetDecisionSchema = z.object({ budgetApproved: z.boolean(), reason: z.string().optional() }).loose();

/** The budget middleware's hooks. */
export const budgetMiddleware: MiddlewareDefinition<typeof BudgetConfigSchema> = {
  name: 'budget',
  description: 'Caps the usage a run may spend; stops it or holds it for approval.',
  configSchema: BudgetConfigSchema,
  create(config, context) {
    if (config.scope === 'session') {
      throw new KeelError('FAILED_PRECONDITION', 'budget: session scope needs an agent with a session store (sessions are not available in this version)');
    }
    const limit = flatten(config.limit);
    const fields = Object.keys(limit).sort();
    // spent = carried + (run usage now - baseline); approval renews: carried 0, baseline now.
    let carried = context.resuming ? (recordedSpent(context.inputMessages) ?? {}) : {};
    let baseline: Record<string, number> = {};
    const spent = () => add(carried, subtract(flatten(context.usage()), baseline));
    const overLimit = (): string | undefined => {
      const now = spent();
      const field = fields.find((key) => (now[key] ?? 0) >= limit[key]!);
      return field ? `used ${now[field] ?? 0} of ${limit[field]} ${field}` : undefined;
    };
    const spentUsage = (): Usage => {
      const now = spent();
      const usage: Usage = {};
      const custom: Record<string, number> = {};
      for (const [key, value] of Object.entries(now)) {
        if (key.startsWith('custom.')) custom[key.slice('custom.'.length)] = value;
        else (usage as Record<string, number>)[key] = value;
      }
      if (Object.keys(custom).length) usage.custom = custom;
      return usage;
    };

    return {
      async wrapGenerate(params, next) {
        if (!(context.resuming && params.iteration === 0)) {
          const over = overLimit();
          if (over) throw budgetExceeded(over);
        }
        const outcome = await next(params);
        const message = outcome.response.message;
        return { response: { ...outcome.response, message: { ...message, metadata: { ...message.metadata, [BUDGET_METADATA_KEY]: { spent: spentUsage() } } } } };
      },
      ...(config.interrupt
        ? {
            async wrapTool(params, next) {
              const resume = params.resume;
              if (resume && resume.stageIndex > context.stageIndex) return next(params);
              if (resume && resume.stageIndex === context.stageIndex) {
                const decision = BudgetDecisionSchema.safeParse(resume.payload);
                if (!decision.success || !decision.data.budgetApproved) {
                  const reason = decision.success ? decision.data.reason : undefined;
                  throw budgetExceeded(`continuing past the limit was refused${reason ? `: ${reason}` : ''}`);
                }
                carried = {};
                baseline = flatten(context.usage());
                return next({ ...params, resume: undefined });
              }
              const over = overLimit();
              if (!over) return next(params);
              const now = spent();
              throw new ToolInterrupt(
                'budget',
                {
                  message: `Usage budget reached: ${over}`,
                  spent: Object.fromEntries(fields.map((key) => [key, now[key] ?? 0])),
                  limit,
                },
                context.stageName,
                context.stageIndex,
              );
            },
          }
        : {}),
    };
  },
};

/** `use: [budget({ limit: { totalTokens: 50_000, custom: { cost: 2 } }, interrupt: true })]` */
export function budget(config: BudgetConfig): MiddlewareRef {
  return middlewareRef(budgetMiddleware, config);
}
