/**
 * A middleware of your own, as docs/middleware/custom.md builds it: `spendingGate` holds
 * every call whose `amount` is over a limit until someone decides, with a hold kind of its
 * own (`spending`): what it shows, what it asks, and the decision it takes (approve or deny,
 * or a new limit). Listed under `middlewareModules`, it is bundled with the workflow, so it
 * is deterministic: no I/O, no clock, no randomness.
 */
import { z } from 'zod';
import { defineHold, defineMiddleware, toolFail } from 'keel-agents/middleware';

/** The decision a person sends: keel's `{ approved, reason? }`, or a new limit the call must fit. */
const SpendingDecision = z.union([
  z.object({ approved: z.boolean(), reason: z.string().optional() }).strict(),
  z.object({ limit: z.number().positive().describe('a new limit; the call runs when its amount fits') }).strict(),
]);

/** The hold: the data shown, the question asked, and the decision taken (the run checks a decision against it). */
export const spendingHold = defineHold({
  kind: 'spending',
  question: ({ tool, amount, limit }) => `Let ${tool} spend ${amount}? (the limit is ${limit})`,
  data: z.object({ tool: z.string(), amount: z.number(), limit: z.number() }),
  decision: SpendingDecision,
});

/** `use: [spendingGate({ limit: 100 })]` */
export const spendingGate = defineMiddleware({
  name: 'spendingGate',
  description: 'Holds tool calls that would spend more than a limit until someone approves.',
  configSchema: z.object({ limit: z.number().positive(), field: z.string().default('amount') }).strict(),
  holds: [spendingHold],
  create(config, context) {
    return {
      async wrapTool(params, next) {
        const input = params.request.input as Record<string, unknown> | undefined;
        const amount = typeof input?.[config.field] === 'number' ? (input[config.field] as number) : 0;
        // A restart of a call this gate held: the decision, parsed by SpendingDecision (and typed by it).
        if (params.resumed !== undefined) {
          const decision = params.resumed;
          if ('limit' in decision && amount <= decision.limit) return next(params);
          if ('approved' in decision && decision.approved) return next(params);
          const reason = 'reason' in decision ? decision.reason : undefined;
          throw toolFail(`spending ${amount} was not approved${reason ? `: ${reason}` : ''}`);
        }
        // A later stage's question (the tool's own) on a call this gate already let through.
        if (params.released || amount <= config.limit) return next(params);
        return context.interrupt({ tool: params.request.name, amount, limit: config.limit });
      },
    };
  },
});
