/**
 * Schemas of a generate run: its input, its result, its status, and the resolved agent
 * spec the workflow works from. Everything here crosses a Temporal boundary, so it is
 * JSON-plain. Pure: safe in workflow code.
 */
import { z } from 'zod';
import { PrincipalSchema } from './principal';
import { FinishReasonSchema, MessageSchema, cutText, PartSchema, ToolDefinitionSchema, ToolRequestPartSchema, ToolResponsePartSchema } from './messages';
import { UsageSchema } from './usage';
import { ArtifactSchema } from './artifacts';
import { DurationSchema } from './duration';
import { StatusNameSchema } from './status';
import { DecisionRecordSchema, HoldVotesSchema, takesApproval } from './holds';
import { ApproverRulesSchema } from './approvers';
import { SteerRecordSchema } from './steering';
import { OutputSpecSchema } from './output';
import { ForkOriginSchema } from './fork';

/** A middleware named by its registered name and a JSON config. */
export const MiddlewareRefSchema = z.object({
  name: z.string().min(1),
  config: z.record(z.string(), z.unknown()).default({}),
});
export type MiddlewareRef = z.infer<typeof MiddlewareRefSchema>;
/** What callers may write for a middleware ref (config optional). */
export type MiddlewareRefInput = z.input<typeof MiddlewareRefSchema>;

/**
 * What resumes an interrupted run (interruptMode 'return'): each held request of the
 * conversation's last model message answered by a restart (the tool request part, with
 * `metadata.resumed` = the decision's payload) or a respond (a tool response part).
 */
export const RunResumeSchema = z.object({
  restart: z.array(ToolRequestPartSchema).default([]),
  respond: z.array(ToolResponsePartSchema).default([]),
  /** Recorded as the `resumed` metadata of the tool message the resume adds (default `true`). */
  metadata: z.record(z.string(), z.unknown()).optional(),
  /** Who decided these holds (recorded with each decision in the run's status and result). */
  decidedBy: z.string().min(1).max(200).optional(),
});
export type RunResume = z.infer<typeof RunResumeSchema>;

/** A conversation's state as a client-managed agent carries it from run to run. */
export const ClientStateSchema = z.object({
  messages: z.array(MessageSchema).default([]),
  artifacts: z.array(ArtifactSchema).default([]),
  custom: z.record(z.string(), z.unknown()).default({}),
});

/** The input of `generateWorkflow`: a run is fully described by this JSON. */
export const RunInputSchema = z
  .object({
    /** The agent to run, by registered name. */
    agent: z.string().min(1),
    /** The conversation so far; usually one user message. */
    messages: z.array(MessageSchema).min(1),
    /** Middleware added to the agent's own `use`, after (inside) them. */
    use: z.array(MiddlewareRefSchema).default([]),
    /** Overrides the agent's maxTurns. */
    maxTurns: z.number().int().optional(),
    /**
     * `wait` (default): a held tool call pauses the run until a decision arrives.
     * `return`: the run ends with finish reason `interrupted` and the interrupted parts.
     */
    interruptMode: z.enum(['wait', 'return']).default('wait'),
    /** How long a held call waits for a decision (no limit when absent). */
    interruptTimeout: DurationSchema.optional(),
    /** What a timed-out hold becomes: a denial (default) or the run failing DEADLINE_EXCEEDED. */
    onInterruptTimeout: z.enum(['deny', 'fail']).default('deny'),
    /** Resumes an interrupted run (interruptMode 'return'): `messages` end with its model message. */
    resume: RunResumeSchema.optional(),
    /** The answer this run must give (overrides the agent's `output`): one JSON value matching the schema, in the result's `output`. */
    output: OutputSpecSchema.optional(),
    /** Artifacts the run starts with (a session's, or a client's state). */
    artifacts: z.array(ArtifactSchema).default([]),
    /**
     * For a client-managed agent: the conversation so far (its messages come before
     * `messages`), artifacts and custom data; the result carries the state after the run.
     */
    state: ClientStateSchema.optional(),
    /** For a fork (docs/fork.md): the run and turn it goes on from, and what the conversation had spent there. */
    fork: ForkOriginSchema.optional(),
    /** The model the run calls, over its agent's own (a model the workers registered). */
    model: z.string().min(1).optional(),
    /** Set by a session workflow: the session this run is one of, and what it spent before. */
    session: z.object({ id: z.string(), usage: UsageSchema, sentBy: PrincipalSchema.optional() }).optional(),
    /**
     * The run this run's holds are reported to, and the key they are shown under there, when it
     * is not the Temporal parent (a session run a run delegated).
     */
    reportTo: z.object({ runId: z.string(), key: z.string() }).optional(),
    /**
     * When the run continues as new (at a turn boundary, once its history passes either bound
     * or Temporal suggests it). Defaults: 4 MiB or 10,000 events.
     */
    continueAsNewAt: z
      .object({
        historyBytes: z
          .number()
          .int()
          .positive()
          .default(4 * 1024 * 1024),
        historyEvents: z.number().int().positive().default(10_000),
      })
      .strict()
      .prefault({}),
    /**
     * Set by keel on the input of the next run of a chain (continue-as-new): the iteration it
     * goes on at, the run's state (usage, turn, call counters, artifacts, tasks) and what each
     * middleware carried (by `<position>:<name>`). `messages` holds the conversation so far.
     */
    continued: z
      .object({
        iteration: z.number().int().min(1),
        state: z.record(z.string(), z.unknown()),
        middleware: z.record(z.string(), z.unknown()).default({}),
        /** How many runs the chain has had before this one. */
        runs: z.number().int().min(1),
      })
      .optional(),
  })
  // An unknown field is an error naming it, never silently dropped.
  .strict();
export type RunInput = z.infer<typeof RunInputSchema>;
export type RunInputOptions = z.input<typeof RunInputSchema>;

/** A plain error as results and status report it. */
export const RunErrorSchema = z.object({ status: StatusNameSchema, message: z.string() });

/**
 * A pending hold: a held tool or model call waiting for a decision. It says
 * what a person is asked and what decision the raising stage takes, so a client can render
 * it without knowing the middleware: send `{ interruptId, restart: <value matching decision> }`
 * (or the `approved` and `respond` shorthands the kind accepts).
 */
export const HoldSchema = z.object({
  id: z.string(),
  /** The kind of hold, as its middleware declares it (`approval`, `budget`, `tool`, ...). */
  kind: z.string(),
  /** The one line a person is asked. */
  question: z.string().optional(),
  toolName: z.string().optional(),
  input: z.unknown().optional(),
  /** For a sub-agent's hold shown by a run above it: the run ids from there down to the run holding it. */
  path: z.array(z.string()).optional(),
  /** The held call's ref in its model message. */
  ref: z.string().optional(),
  /** Deprecated: the same line as `question` (kept for clients written before it). */
  message: z.string().optional(),
  /** The stage that raised it: a middleware name, or "tool". */
  raisedBy: z.string().optional(),
  /** Everything the hold carries, as the stage that raised it gave it. */
  data: z.record(z.string(), z.unknown()).optional(),
  /** JSON Schema of the decision the raising stage takes (the `restart` value; `{ approved, reason? }` is one too when it fits). */
  decision: z.record(z.string(), z.unknown()).optional(),
  /** What a stand-in output (`respond`) does: answers the call (`answer`, checked against the tool's output schema) or goes to the stage (`decide`). */
  respond: z.enum(['answer', 'decide']).optional(),
  /** JSON Schema of the held tool's output, when it declares one: what a stand-in output (`respond`) answering the call must match. */
  outputSchema: z.record(z.string(), z.unknown()).optional(),
  /** When the hold was raised (ISO 8601, the run's clock); absent on holds from before it. */
  since: z.string().optional(),
  /** The agent of the run holding the call (a sub-agent's own, for a hold a run above it shows); absent on holds from before it. */
  agent: z.string().optional(),
  /** The turn of that run the call was asked for in. */
  turn: z.number().int().optional(),
  /** What that run was asked: its latest user message, cut as a run's prompt is (`promptExcerpt`). */
  asked: z.string().optional(),
  /** The model's latest text in that run before the call (cut to 200 characters): what the agent was doing. */
  modelText: z.string().optional(),
  /** For a hold its approver rule puts to a vote (a quorum, an escalation, docs/auth.md): who voted, who still may, when it escalates. */
  votes: HoldVotesSchema.optional(),
});
export type Hold = z.infer<typeof HoldSchema>;

/** The memo key under which a run keeps its pending holds, so clients see them without a worker (`keel holds`, `keel status`). */
export const HOLDS_MEMO_KEY = 'keelHolds';

/** A pending hold as the run's memo records it: small, with the call's input cut short as text. */
export const MemoHoldSchema = HoldSchema.pick({
  id: true,
  kind: true,
  question: true,
  toolName: true,
  ref: true,
  path: true,
  message: true,
  since: true,
  agent: true,
  turn: true,
  asked: true,
  modelText: true,
  votes: true,
}).extend({
  /** True when its decision takes `{ approved }` (approve and deny decide it); absent in memos from before it. */
  approvable: z.boolean().optional(),
  /** The held call's input as JSON, cut to 200 characters (`…` at the cut); absent in memos from before it. */
  inputText: z.string().optional(),
});
export type MemoHold = z.infer<typeof MemoHoldSchema>;

/** How long a hold's question, or its call's input as JSON, may be in the memo. */
const MEMO_TEXT_CHARS = 200;

/** The memo entry of pending holds. */
export function memoHolds(interrupts: readonly Hold[]): MemoHold[] {
  return interrupts.map(({ id, kind, question, toolName, input, ref, path, message, decision, since, agent, turn, asked, modelText, votes }) => {
    const line = question ?? message;
    const inputJson = input === undefined ? undefined : JSON.stringify(input);
    return {
      id,
      kind,
      ...(line !== undefined ? { question: cutText(line, MEMO_TEXT_CHARS) } : {}),
      ...(decision !== undefined ? { approvable: takesApproval(decision) } : {}),
      ...(toolName !== undefined ? { toolName } : {}),
      ...(inputJson !== undefined ? { inputText: cutText(inputJson, MEMO_TEXT_CHARS) } : {}),
      ...(ref !== undefined ? { ref } : {}),
      ...(path !== undefined ? { path } : {}),
      ...(since !== undefined ? { since } : {}),
      ...(agent !== undefined ? { agent } : {}),
      ...(turn !== undefined ? { turn } : {}),
      ...(asked !== undefined ? { asked } : {}),
      ...(modelText !== undefined ? { modelText } : {}),
      ...(votes !== undefined ? { votes } : {}),
    };
  });
}

/** A run that follows another's holds, and the key it shows them under (the `reportHoldsTo` signal). */
export const ReportTargetSchema = z
  .object({
    runId: z.string().min(1),
    key: z
      .string()
      .min(1)
      .regex(/^[^/]+$/, 'a key has no "/"'),
  })
  .strict();
export type ReportTarget = z.infer<typeof ReportTargetSchema>;

/** How many followers a run reports its holds to (the latest). */
export const KEPT_FOLLOWERS = 5;

/** What a sub-agent run reports to the run it answers to: its pending holds (its own and its descendants'). */
export const ChildHoldsSchema = z.object({
  runId: z.string(),
  /** The key the receiving run shows them under (default: the part of `runId` after the receiver's id). */
  key: z.string().optional(),
  interrupts: z.array(HoldSchema),
});
export type ChildHolds = z.infer<typeof ChildHoldsSchema>;

/** What a finished run returns. */
export const RunResultSchema = z.object({
  finishReason: FinishReasonSchema,
  message: MessageSchema.optional(),
  text: z.string(),
  messages: z.array(MessageSchema),
  usage: UsageSchema,
  turns: z.number().int(),
  /** The run's artifacts at its end. */
  artifacts: z.array(ArtifactSchema),
  tasks: z.array(z.string()),
  /** For a run given `state`: the state after it (history without the system prompt). */
  state: ClientStateSchema.optional(),
  /** With finish reason `interrupted`: the held tool request parts (metadata.interrupt says why). */
  interrupts: z.array(PartSchema).default([]),
  /** Every decision the run took (the latest 100): who decided which hold, when, how, and why. */
  decisions: z.array(DecisionRecordSchema).default([]),
  /** For a run with an output schema (the agent's or the run's) that ended `stop`: the answer, parsed and checked. */
  output: z.unknown().optional(),
});
export type RunResult = z.infer<typeof RunResultSchema>;

/**
 * Where a run is in its lifecycle, as `status.state` reports it. `terminated` and `timed_out`
 * come from Temporal (a run ended from outside, by `temporal workflow terminate` or an execution
 * timeout): the run itself never reports them. (The workflow's in-memory state of a run is
 * `RunState`, in src/workflows/run-state.ts.)
 */
export const RunLifecycleSchema = z.enum(['running', 'waiting', 'completed', 'failed', 'cancelled', 'terminated', 'timed_out']);
export type RunLifecycle = z.infer<typeof RunLifecycleSchema>;

/**
 * A decision the server re-applied to a run made by `workflow reset` (it was sent after the
 * reset point): kept until the run raises that hold again (`waiting`), then `applied`, or
 * `dropped` when the run ended first or the hold with its id is for another tool or call.
 */
export const ReappliedDecisionSchema = z.object({
  interruptId: z.string(),
  decision: z.enum(['approved', 'denied', 'respond', 'restart']),
  state: z.enum(['waiting', 'applied', 'dropped']),
  /** The tool of the hold raised again with its id. */
  toolName: z.string().optional(),
  /** Why it was dropped. */
  reason: z.string().optional(),
});
export type ReappliedDecision = z.infer<typeof ReappliedDecisionSchema>;

/** A signal a run refused, and why. */
export const RefusedSignalSchema = z.object({ signal: z.string(), reason: z.string() });

/** How many refused signals a run's status keeps. */
export const KEPT_REFUSED_SIGNALS = 10;

/** The `status` query's answer. */
export const RunStatusSchema = z.object({
  state: RunLifecycleSchema,
  agent: z.string(),
  turn: z.number().int(),
  usage: UsageSchema,
  interrupts: z.array(HoldSchema),
  messageCount: z.number().int(),
  finishReason: FinishReasonSchema.optional(),
  text: z.string().optional(),
  /** A completed run's structured answer (when it has an output schema). */
  output: z.unknown().optional(),
  error: RunErrorSchema.optional(),
  /** Background tasks (sub-agent runs) this run started: `TaskRecordSchema` (core/tasks.ts, which imports this module), spelled out. */
  tasks: z.array(z.object({ taskId: z.string(), agent: z.string(), runId: z.string(), name: z.string().optional() })).default([]),
  /** The run's artifacts so far, by name and size (the result carries their content). */
  artifacts: z.array(z.object({ name: z.string(), chars: z.number().int(), metadata: z.record(z.string(), z.unknown()).optional() })).default([]),
  /** The last decision sent by signal that the run refused, and why (a signal gets no answer). */
  refusedDecision: z.object({ interruptId: z.string().optional(), reason: z.string() }).optional(),
  /**
   * The latest signals the run refused (at most 10, oldest first): a decision it could not take,
   * a payload it could not decode, a report of holds from a run it did not start. A signal gets no
   * answer, so this (and the worker's log) is where a sender learns why nothing happened.
   */
  refusedSignals: z.array(RefusedSignalSchema).optional(),
  /** The decisions the run has taken (the latest 100, oldest first): who decided which hold, when, by which route, and why. */
  decisions: z.array(DecisionRecordSchema).optional(),
  /** After a `workflow reset`: the decisions the server re-applied, and what became of them. */
  reappliedDecisions: z.array(ReappliedDecisionSchema).optional(),
  /** For a fork: the run and turn it goes on from, and what the conversation had spent there (not in `usage`). */
  fork: ForkOriginSchema.optional(),
  /**
   * For a run that keeps its tree's budget ledger (it has a Budget): what the whole tree spent,
   * as the ledger counts it (this run's model calls, and every call the runs below it told it of,
   * however those runs ended).
   */
  treeUsage: UsageSchema.optional(),
  /**
   * The steering messages the run accepted (the latest 100, oldest first): pending until its
   * next model call takes them, then applied (with the turn), or dropped when the run ended first.
   */
  steering: z.array(SteerRecordSchema).optional(),
});
export type RunStatus = z.infer<typeof RunStatusSchema>;

/** Temporal retry policy fields keel exposes; durations as strings ('1 second'). */
export const RetryPolicySpecSchema = z.object({
  initialInterval: DurationSchema.default('1 second'),
  backoffCoefficient: z.number().min(1).default(2),
  maximumInterval: DurationSchema.default('30 seconds'),
  maximumAttempts: z.number().int().min(0).default(10),
});

/** Timeouts and infrastructure retry policy of one kind of activity. */
export const ActivitySpecSchema = z.object({
  startToCloseTimeout: DurationSchema.default('10 minutes'),
  heartbeatTimeout: DurationSchema.default('30 seconds'),
  retry: RetryPolicySpecSchema.prefault({}),
});
export type ActivitySpec = z.infer<typeof ActivitySpecSchema>;

/**
 * An agent as the workflow sees it, resolved by a local activity at the start of the run
 * (so a changed definition never breaks replay of a run under way).
 */
export const AgentSpecSchema = z.object({
  name: z.string(),
  description: z.string(),
  model: z.string(),
  system: z.string().optional(),
  /** Model config sent with every request of the run (temperature, ...). */
  config: z.record(z.string(), z.unknown()).optional(),
  tools: z.array(ToolDefinitionSchema),
  use: z.array(MiddlewareRefSchema),
  maxTurns: z.number().int(),
  activities: z.object({ model: ActivitySpecSchema, tool: ActivitySpecSchema }),
  /** Every model registered on the worker that resolved the agent (Fallback checks names against it). */
  models: z.array(z.string()).optional(),
  /** Every agent registered on that worker, with its description and session mode (for delegation). */
  directory: z.array(z.object({ name: z.string(), description: z.string(), session: z.enum(['client', 'server']).default('client') })).default([]),
  /** Who keeps the agent's conversation between runs. */
  session: z.enum(['client', 'server']).default('client'),
  /** The answer the agent gives: one JSON value matching the schema (absent: text). */
  output: OutputSpecSchema.optional(),
  /** True when the namespace has keel's search attributes (KeelAgent, KeelStatus): the run keeps them current. */
  searchAttributes: z.boolean().optional(),
  /** True when the namespace also has KeelForkOf: a fork records its source there (docs/fork.md). */
  forkAttribute: z.boolean().optional(),
  /** True when the namespace also has KeelTenant and KeelOwner: a run records whom it belongs to there (docs/tenants.md). */
  principalAttributes: z.boolean().optional(),
  /**
   * Set when the worker that resolved the agent keeps every payload inline (External Storage
   * off, `externalStorage.driver: none`): the most bytes one payload may hold. The run then
   * fails, naming what grew, when its result, the input of its next run (continue-as-new) or a
   * stop's partial result would not fit. Absent: large payloads are stored (or the agent was
   * resolved by a worker from before keel said).
   */
  inlinePayloadLimit: z.number().int().positive().optional(),
  /** Who may decide the agent's holds, by tool name ('*': any hold): `group:<name>` or `user:<subject>` (docs/auth.md). Absent: anyone who can reach the run. */
  approvers: ApproverRulesSchema.optional(),
  /** How many webhooks the worker that resolved the agent tells of holds (`notify:`, docs/notify.md). Absent: none. */
  notify: z.number().int().positive().optional(),
  /**
   * The task queue of each rate-limited model's calls (a model with `rateLimit`), by model name:
   * the run schedules that model's calls there, where Temporal applies the limit. Absent: every
   * call goes to the run's own queue.
   */
  modelQueues: z.record(z.string(), z.string()).optional(),
  /**
   * The Temporal priority key of the background tasks the run starts (the worker's
   * `fairness.priority.background`, docs/tenants.md). Absent (resolved by a worker from before
   * keel set priorities): a task goes with its parent's.
   */
  backgroundPriority: z.number().int().min(1).max(5).optional(),
  /**
   * Models whose calls this run makes as local activities, and tools it runs as local activities
   * (docs/local-calls.md), as the worker that resolved the agent decided. Absent: every call is a
   * regular activity (and every run resolved before keel had local calls stays so on replay).
   */
  localModels: z.array(z.string()).optional(),
  localTools: z.array(z.string()).optional(),
});
export type AgentSpec = z.infer<typeof AgentSpecSchema>;

/**
 * Set on a call the run scheduled again because every attempt of the one before was refused by
 * workers that lack the agent, model or tool it names (a rolling deploy whose old workers kept
 * taking it): those refusals spent the call's attempts without running it. The new call keeps
 * the first one's clock (its retry time runs from `since`), the workers already asked, and its
 * activity id (a tool's idempotency key stays the same).
 */
export const RefusedBeforeSchema = z.object({
  /** When the first call was scheduled (ms since the epoch, as Temporal recorded it). */
  since: z.number(),
  /** The workers that refused it, and what each has of the kind that was missing. */
  workers: z.array(z.object({ identity: z.string(), has: z.array(z.string()) })),
  /** The first call's activity id. */
  activityId: z.string(),
});
export type RefusedBefore = z.infer<typeof RefusedBeforeSchema>;

/** Input of the `callModel` activity: the request travels by reference (read back from the run), or inline when small. */
export const CallModelInputSchema = z.object({
  model: z.string(),
  /** How many calls this run made to this model before this one (scripted replies use it). */
  callIndex: z.number().int(),
  /** Key of the request in the run's `modelRequest` query. */
  requestKey: z.string(),
  /** The run id (the workflow id a user sees). */
  runId: z.string(),
  /** Temporal's id of the run's current execution (changes on continue-as-new). */
  temporalRunId: z.string(),
  /** The run's agent and turn, for traces and logs (absent from runs started before them). */
  agent: z.string().optional(),
  turn: z.number().int().optional(),
  /** A small request's JSON, carried in the input itself (no read back from the run). */
  requestText: z.string().optional(),
  refusedBefore: RefusedBeforeSchema.optional(),
});
export type CallModelInput = z.infer<typeof CallModelInputSchema>;

/** Input of the `callTool` activity. */
export const CallToolInputSchema = z.object({
  toolName: z.string(),
  input: z.unknown(),
  ref: z.string().optional(),
  /** The run's agent and turn, for traces and logs (absent from runs started before them). */
  agent: z.string().optional(),
  turn: z.number().int().optional(),
  /** For a restart of the tool's own interrupt: the decision's payload. */
  resumed: z.unknown().optional(),
  refusedBefore: RefusedBeforeSchema.optional(),
  /** Whom the run belongs to, and who sent its session turn (docs/tenants.md); absent: no one said. */
  principal: PrincipalSchema.optional(),
  sentBy: PrincipalSchema.optional(),
});

/** Marks a `ToolCallResult`, so a run tells it from a bare output (an older worker's answer). */
export const TOOL_CALL_RESULT = 'keel-tool-result';

/** What the tool activity answers a run that asked for usage: the output and what the tool reported it spent. */
export const ToolCallResultSchema = z.object({ result: z.literal(TOOL_CALL_RESULT), output: z.unknown(), usage: UsageSchema.optional() });
export type ToolCallResult = z.infer<typeof ToolCallResultSchema>;

/** Input of the `validateToolOutput` local activity (a stand-in output for a held call). */
export const ValidateToolOutputInputSchema = z.object({ toolName: z.string(), output: z.unknown() });
export type ValidateToolOutputInput = z.infer<typeof ValidateToolOutputInputSchema>;
export type CallToolInput = z.infer<typeof CallToolInputSchema>;

/** Input of the `resolveAgent` local activity. */
export const ResolveAgentInputSchema = z.object({ agent: z.string(), refusedBefore: RefusedBeforeSchema.optional() });
export type ResolveAgentInput = z.infer<typeof ResolveAgentInputSchema>;
