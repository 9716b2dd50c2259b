/**
 * Budget (reference: genkit-middleware-exp/budget): caps what a run may spend (tokens,
 * custom counters such as cost). Checked before every model call of the run, outside
 * Retry and Fallback; over the limit the run stops ABORTED with finish reason `aborted`,
 * keeping its partial response. With `interrupt`, the next tool calls are held instead and
 * one decision answers them all: approval renews the count of every budget that holds,
 * refusal stops the run; a budget without `interrupt` is a hard cap and never renews. Every
 * model call of the run counts (the loop's, a judge's). One limit holds for the whole tree of
 * runs: the run where the Budget is set keeps the tree's ledger, and every sub-agent run below
 * it (sync, background, a session sub-agent's turn) asks that ledger before each model call and
 * tells it after each (tree-ledger.ts). Runs in the workflow.
 */
import { z } from 'zod';
import { KeelError, RunStoppedError } from '../../core/errors';
import { type Message } from '../../core/messages';
import { USAGE_FIELDS, type Usage, type UsageField } from '../../core/usage';
import type { MiddlewareRef } from '../../core/run';
import { defineHold } from '../../core/holds';
import { budgetStopped } from '../../core/workflow-metrics';
import { defineMiddleware } from '../../middleware/define-middleware';
import { replaceFinalMessage } from '../../middleware/outcome';
import type { MiddlewareContext } from '../../middleware/types';
import type { BudgetPart, TreeLedger } from './ledger-door';
import { windowStart, type SpendLedgers, type SpendScope } from './spend-door';
import { DurationSchema, durationMs } from '../../core/duration';

/** Metadata key of the spent record on a run's final message (the reference's, for portability). */
export const BUDGET_METADATA_KEY = 'genkit-middleware-exp/budget';

const Cap = z.number().min(0, 'must not be negative');

/** Budget's config. */
export const BudgetConfigSchema = z
  .object({
    /** Each non-zero field is a cap (every usage field of the reference), `custom` key by key. */
    limit: z
      .object({
        ...(Object.fromEntries(USAGE_FIELDS.map((field) => [field, Cap.optional()])) as Record<UsageField, z.ZodOptional<typeof Cap>>),
        custom: z.record(z.string(), Cap).optional(),
      })
      .strict(),
    /**
     * Usage already spent against the limit when the run starts: a parent run's, handed to a
     * sub-agent, so the whole tree shares one limit.
     */
    spent: z
      .object(Object.fromEntries(USAGE_FIELDS.map((field) => [field, z.number().optional()])) as Record<UsageField, z.ZodOptional<z.ZodNumber>>)
      .extend({ custom: z.record(z.string(), z.number()).optional() })
      .strict()
      .optional(),
    /**
     * Set on a Budget a parent handed down: the run that keeps the tree's ledger, and the Budget
     * stage in it. The run then asks that ledger before each model call, and tells it of each.
     */
    ledger: z
      .object({ runId: z.string().min(1), stage: z.number().int().min(0) })
      .strict()
      .optional(),
    /**
     * What the limit counts: this run (default), the agent session, or every run of the run's
     * tenant or owner in a window (`window`), through their spend ledger (docs/tenants.md).
     */
    scope: z.enum(['run', 'session', 'tenant', 'owner']).default('run'),
    /** For scope tenant or owner: the window the limit is per (default a day: UTC days). */
    window: DurationSchema.optional(),
    /** Hold the next tool calls for approval instead of stopping the run. */
    interrupt: z.boolean().default(false),
  })
  .strict()
  .superRefine((config, issues) => {
    if (Object.keys(flatten(config.limit)).length === 0) issues.addIssue({ code: 'custom', path: ['limit'], message: 'set at least one field of limit' });
    const shared = config.scope === 'tenant' || config.scope === 'owner';
    if (config.window !== undefined && !shared)
      issues.addIssue({ code: 'custom', path: ['window'], message: `a window is for scope tenant or owner; scope ${config.scope} has none` });
    if (config.window !== undefined && (durationMs(config.window) ?? 0) < 1000)
      issues.addIssue({ code: 'custom', path: ['window'], message: 'must be at least 1 second' });
    if (shared && (config.ledger || config.spent))
      issues.addIssue({ code: 'custom', path: ['scope'], message: `a ${config.scope} budget counts in its ledger: it takes no spent or ledger` });
    if (config.scope === 'session' && config.interrupt) {
      issues.addIssue({
        code: 'custom',
        path: ['interrupt'],
        message: 'a session-scoped budget cannot interrupt: a later turn would start over its limit with nothing to hold',
      });
    }
  });
export type BudgetConfig = z.input<typeof BudgetConfigSchema>;

/** Usage as `{ field: n }`, custom keys as `custom.<key>`, non-zero fields only. */
export function flatten(usage: Usage): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(usage)) {
    if (key === 'custom' && value && typeof value === 'object') {
      for (const [custom, amount] of Object.entries(value)) if (amount) out[`custom.${custom}`] = amount;
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

/** The run stopped over its budget (status ABORTED, finish reason `aborted`). */
export function budgetExceeded(message: string): RunStoppedError {
  budgetStopped();
  return new RunStoppedError({ status: 'ABORTED', message: `budget: ${message}` });
}

/**
 * A decision on a budget hold: keel's `{ approved, reason? }` or the reference's
 * `{ budgetApproved, reason? }`. Anything else (a bare restart, a stand-in output, something
 * undecodable) refuses.
 */
export const BudgetDecisionSchema = z
  .preprocess(
    (raw) => {
      if (typeof raw !== 'object' || raw === null) return raw;
      if ('respond' in raw) return { approved: false, reason: 'the hold was answered with a tool output' };
      return 'budgetApproved' in raw && !('approved' in raw) ? { ...raw, approved: raw.budgetApproved } : raw;
    },
    z.object({
      approved: z.boolean().describe('true renews the budget and the run goes on; false stops it'),
      reason: z.string().optional().describe('why (the run stops with it when refused)'),
    }),
  )
  .catch({ approved: false });

/** The hold a Budget with `interrupt` raises: the run is over its limit and waits to be let go on. */
export const budgetHold = defineHold({
  kind: 'budget',
  question: ({ message }) => message,
  data: z.object({
    message: z.string(),
    /** What the run (or its tree) has spent, per capped field. */
    spent: z.record(z.string(), z.number()),
    /** The limit, per capped field. */
    limit: z.record(z.string(), z.number()),
  }),
  decision: BudgetDecisionSchema,
  respond: 'decide',
  sharedDecision: true,
});

/** The holding budgets of a run: approving any of their holds renews each of them. */
interface Renewals {
  renewers: Array<() => void>;
}

const refused = (reason: string | undefined) => budgetExceeded(`continuing past the limit was refused${reason ? `: ${reason}` : ''}`);

/**
 * One Budget's state in one run. Every budget counts the same calls: spent = carried + (usage
 * now - baseline); a budget that holds renews on approval (carried 0, baseline now). A
 * handed-down Budget (`member`) counts what its tree's ledger last answered instead.
 */
interface BudgetState {
  config: z.output<typeof BudgetConfigSchema>;
  context: MiddlewareContext;
  /** The limit per capped field, and those fields, sorted. */
  limit: Record<string, number>;
  fields: string[];
  /** The run's side of the tree's ledger (absent in the middleware harness without one). */
  tree: TreeLedger | undefined;
  /** For a handed-down Budget: the ledger it asks before each model call. */
  member: { runId: string; stage: number } | undefined;
  carried: Record<string, number>;
  baseline: Record<string, number>;
  /** For a handed-down Budget: what the ledger last answered, and this run's usage then (the count goes on from there if the ledger is gone). */
  answered: { spent: Record<string, number>; at: Record<string, number> };
  /**
   * For scope tenant or owner: the ledger, whose window it counts, what the window had spent at
   * the last check, and (approved past the limit) what it had spent then, in which window.
   */
  shared: { ledgers: SpendLedgers; scope: SpendScope; name: string; size: number; spent: Record<string, number>; renewal?: Renewal } | undefined;
}

/** A tenant or owner budget approved past its limit: counted from what its window had spent then. */
const RenewalSchema = z.object({ start: z.number(), spent: z.record(z.string(), z.number()) });
type Renewal = z.infer<typeof RenewalSchema>;

/** A window's default: a day. */
const DAY_MS = 24 * 60 * 60 * 1000;

/** What carries over to the next run of a long run's chain. */
const BudgetCarrySchema = z.object({
  carried: z.record(z.string(), z.number()),
  baseline: z.record(z.string(), z.number()),
  renewal: RenewalSchema.optional(),
});

/** A Budget's state at the start of a run: from what a parent handed down, the session, the interrupted run, or the previous run of the chain. */
function budgetState(
  config: z.output<typeof BudgetConfigSchema>,
  context: MiddlewareContext<z.output<typeof BudgetCarrySchema>>,
  part: BudgetPart | undefined,
): BudgetState {
  const limit = flatten(config.limit);
  // One ledger for the tree: the run where the Budget is set keeps it (its own calls and every
  // call the runs below tell it of); a handed-down Budget asks it before each model call. Outside
  // a run (the middleware harness) there is no ledger: it counts only its own run's usage.
  const tree = part?.tree;
  const member = tree && config.ledger ? config.ledger : undefined;
  // A session-scoped budget counts what the session spent before this turn; a run-scoped one
  // what a parent handed down, or (resuming) what the interrupted run recorded.
  const handedDown = config.scope === 'session' ? flatten(context.session?.usage ?? {}) : flatten(config.spent ?? {});
  const carried = context.resuming && config.scope === 'run' && !member ? (recordedSpent(context.inputMessages) ?? handedDown) : handedDown;
  // In the next run of a long run's chain, the budget goes on where it was (a renewal included).
  const restored = context.carried;
  return {
    config,
    context,
    limit,
    fields: Object.keys(limit).sort(),
    tree,
    member,
    carried: restored?.carried ?? carried,
    baseline: restored?.baseline ?? {},
    answered: { spent: handedDown, at: {} },
    shared: sharedOf(config, context, part, restored?.renewal),
  };
}

/** A tenant or owner budget's ledger: the run's principal names it; a run of no one has none to count in. */
function sharedOf(
  config: z.output<typeof BudgetConfigSchema>,
  context: MiddlewareContext,
  part: BudgetPart | undefined,
  renewal: Renewal | undefined,
): BudgetState['shared'] {
  const { scope } = config;
  if (scope !== 'tenant' && scope !== 'owner') return undefined;
  const name = context.principal[scope];
  if (!name)
    throw new KeelError(
      'FAILED_PRECONDITION',
      `budget: scope ${scope} counts the spend of the run's ${scope}, and this run belongs to no ${scope} (start it with { ${scope} }, or through keel serve with auth on)`,
    );
  const size = config.window !== undefined ? durationMs(config.window)! : DAY_MS;
  if (!part)
    throw new KeelError(
      'FAILED_PRECONDITION',
      `budget: scope ${scope} counts in the ledger of the run's ${scope}, which only a run has; test it in a run, with a worker (docs/testing.md)`,
    );
  const ledgers = part.spend;
  ledgers.join(scope, name, size);
  return { ledgers, scope, name, size, spent: {}, ...(renewal ? { renewal } : {}) };
}

/** What the budget's calls count from: the tree's (a ledger-keeping Budget) or this run's usage. */
const counted = (state: BudgetState) => flatten(state.tree && !state.member ? state.tree.usage() : state.context.usage());

/** What the budget has spent, per capped field. */
function spentOf(state: BudgetState): Record<string, number> {
  if (state.shared) {
    const since = subtract(state.shared.spent, state.shared.renewal?.spent ?? {});
    return Object.fromEntries(Object.entries(since).map(([key, value]) => [key, Math.max(0, value)]));
  }
  if (state.member) return add(state.answered.spent, subtract(flatten(state.context.usage()), state.answered.at));
  return add(state.carried, subtract(counted(state), state.baseline));
}

/** A handed-down Budget asks the tree's ledger again (before each model call). */
async function refresh(state: BudgetState): Promise<void> {
  const { shared } = state;
  if (shared) {
    shared.spent = flatten(await shared.ledgers.spent(shared.scope, shared.name, shared.size));
    // An approval holds for the window it was given in.
    if (shared.renewal && shared.renewal.start !== windowStart(Date.now(), shared.size)) delete shared.renewal;
    return;
  }
  if (!state.member) return;
  const answer = await state.tree!.ask(state.member.runId, state.member.stage);
  if (answer) state.answered = { spent: add(answer.spent, flatten(answer.untold)), at: flatten(state.context.usage()) };
}

/** Why the budget is over its limit, or undefined. */
function overLimit(state: BudgetState): string | undefined {
  const now = spentOf(state);
  const field = state.fields.find((key) => (now[key] ?? 0) >= state.limit[key]!);
  return field ? `used ${now[field] ?? 0} of ${state.limit[field]} ${field}` : undefined;
}

/** What the budget has spent, as usage (custom counters under `custom`). */
function spentUsage(state: BudgetState): Usage {
  const usage: Usage = {};
  // Entries, not assignments: a counter named `__proto__` stays a key.
  const custom: Array<[string, number]> = [];
  for (const [key, value] of Object.entries(spentOf(state))) {
    if (key.startsWith('custom.')) custom.push([key.slice('custom.'.length), value]);
    else (usage as Record<string, number>)[key] = value;
  }
  if (custom.length) usage.custom = Object.fromEntries(custom);
  return usage;
}

/** What a budget hold shows. */
function holdData(state: BudgetState, over: string) {
  const now = spentOf(state);
  return { message: `Usage budget reached: ${over}`, spent: Object.fromEntries(state.fields.map((key) => [key, now[key] ?? 0])), limit: state.limit };
}

/** Before a model call: over the limit, the run stops, or (interrupt, the tree's ledger) waits for a decision. */
async function check(state: BudgetState, renewAll: () => void): Promise<void> {
  const { config, context, member, tree } = state;
  await refresh(state);
  const over = overLimit(state);
  if (!over) return;
  if (state.shared) {
    // A tenant's (owner's) window over its limit: the run's next model call waits for a decision, or it stops.
    if (!config.interrupt || !context.holdModelCall) throw budgetExceeded(`the ${state.shared.scope} ${state.shared.name} ${over} in its window`);
    const decision = BudgetDecisionSchema.parse(await context.holdModelCall(holdData(state, `the ${state.shared.scope} ${over} in its window`)));
    if (!decision.approved) throw refused(decision.reason);
    return renewAll();
  }
  // A run's own turn that crossed the limit has had its tool calls held (the reference's rule);
  // a tree's runs below can cross it while this run's tools run: then the next call holds.
  if (!config.interrupt || member || !tree?.toldFromBelow() || !context.holdModelCall) throw budgetExceeded(over);
  const decision = BudgetDecisionSchema.parse(await context.holdModelCall(holdData(state, over)));
  if (!decision.approved) throw refused(decision.reason);
  renewAll();
}

/** Budget: `use: [budget({ limit: { totalTokens: 50_000, custom: { cost: 2 } }, interrupt: true })]` */
export const budget = defineMiddleware({
  name: 'budget',
  description: 'Caps the usage a run may spend; stops it or holds it for approval.',
  configSchema: BudgetConfigSchema,
  carrySchema: BudgetCarrySchema,
  holds: [budgetHold],
  // The loop lends the middleware its run's part (src/features/budget/feature.ts); outside a run there is none.
  create(config, context, part?: BudgetPart) {
    if (config.scope === 'session' && !context.session) {
      throw new KeelError('FAILED_PRECONDITION', "budget: session scope needs an agent with a session store (session: 'server'), run as a turn of its session");
    }
    const state = budgetState(config, context, part);
    const { tree, member } = state;
    if (member) tree!.join(member.runId);
    if (tree && !member && !state.shared) tree.serve(context.stageIndex, () => spentOf(state));
    const renewals = context.shared<Renewals>(() => ({ renewers: [] }));
    if (config.interrupt) {
      renewals.renewers.push(() => {
        if (state.shared) state.shared.renewal = { start: windowStart(Date.now(), state.shared.size), spent: state.shared.spent };
        state.carried = {};
        state.baseline = counted(state);
      });
    }
    /** Budgets in one chain claim the same holds: approving one renews every budget that holds. */
    const renewAll = () => renewals.renewers.forEach((renew) => renew());

    return {
      carry: () => ({ carried: state.carried, baseline: state.baseline, ...(state.shared?.renewal ? { renewal: state.shared.renewal } : {}) }),
      // A sub-agent counts against this limit too: it asks the tree's ledger before each model
      // call (and starts with what the tree has spent, its count should the ledger be gone).
      forChildRuns: (): MiddlewareRef[] => {
        // A run below counts in the same tenant's (owner's) ledger: it belongs to the same one.
        if (state.shared)
          return [{ name: 'budget', config: { limit: config.limit, scope: config.scope, ...(config.window ? { window: config.window } : {}) } }];
        const ledger = member ?? (tree ? { runId: tree.runId, stage: context.stageIndex } : undefined);
        return [{ name: 'budget', config: { limit: config.limit, spent: spentUsage(state), ...(ledger ? { ledger } : {}) } }];
      },
      async wrapGenerate(params, next) {
        if (context.resuming && params.iteration === 0) {
          // The resume's first iteration only answers held calls (no model call to check). The
          // holds of a run share one decision: any refusal stops it before a held call runs.
          const decisions = context.resumedHolds();
          const refusal = decisions.find((decision) => !decision.approved);
          if (refusal) throw refused(refusal.reason);
          if (decisions.length) renewAll();
        } else await check(state, renewAll);
        const outcome = await next(params);
        const message = outcome.response.message;
        return replaceFinalMessage(outcome, { ...message, metadata: { ...message.metadata, [BUDGET_METADATA_KEY]: { spent: spentUsage(state) } } });
      },
      ...(config.interrupt
        ? {
            async wrapTool(params, next) {
              // A tenant or owner budget holds model calls only (the others' spend crosses its limit while this run's tools run).
              if (params.released || state.shared) return next(params);
              if (params.resumed !== undefined) {
                if (!params.resumed.approved) throw refused(params.resumed.reason);
                renewAll();
                return next(params);
              }
              const over = overLimit(state);
              if (!over) return next(params);
              return context.interrupt(holdData(state, over));
            },
          }
        : {}),
    };
  },
});
