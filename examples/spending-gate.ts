/**
 * A middleware of your own, as docs/middleware/custom.md builds it: `spendingGate` holds
 * every call whose `amount` is over a limit until someone decides, and reads the decision
 * when the call is restarted. Listed under `middlewareModules`, it is bundled with the
 * workflow, so it is deterministic: no I/O, no clock, no randomness.
 */
import { z } from 'zod';
import { defineMiddleware, toolFail } from 'keel-agents/middleware';

/** The decision a person sends: keel's `{ approved, reason? }`, or a restart raising the limit. */
const SpendingDecision = z.union([z.object({ approved: z.boolean(), reason: z.string().optional() }), z.object({ limit: z.number().positive() })]);

/** `use: [spendingGate({ limit: 100 })]` */
export const spendingGate = defineMiddleware({
  name: 'spendingGate',
  description: 'Holds tool calls that would spend more than a limit until someone approves.',
  configSchema: z.object({ limit: z.number().positive(), field: z.string().default('amount') }).strict(),
  holds: { kind: 'spending' },
  create(config, context) {
    return {
      async wrapTool(params, next) {
        const input = params.request.input as Record<string, unknown> | undefined;
        const amount = typeof input?.[config.field] === 'number' ? (input[config.field] as number) : 0;
        // A restart of a call this gate held: the decision, exactly as it was sent.
        if (params.resumed !== undefined) {
          const decision = SpendingDecision.safeParse(params.resumed);
          if (decision.success && 'limit' in decision.data && amount <= decision.data.limit) return next(params);
          if (decision.success && 'approved' in decision.data && decision.data.approved) return next(params);
          const reason = decision.success && 'reason' in decision.data ? decision.data.reason : undefined;
          throw toolFail(`spending ${amount} was not approved${reason ? `: ${reason}` : ''}`);
        }
        // A later stage's question (the tool's own) on a call this gate already let through.
        if (params.released || amount <= config.limit) return next(params);
        return context.interrupt({ message: `${params.request.name} would spend ${amount}, over the limit of ${config.limit}`, amount, limit: config.limit });
      },
    };
  },
});
