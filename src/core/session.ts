/**
 * Sessions (reference: agent sessions and snapshots): the state a server-managed agent
 * keeps between runs, the snapshots that record each settled run, and what an invocation
 * sends and gets back. Client-managed agents carry the same state in and out of each run.
 * Pure: safe in workflow code.
 */
import { z } from 'zod';
import { PrincipalSchema } from './principal';
import { ArtifactSchema } from './artifacts';
import { MessageSchema } from './messages';
import { UsageSchema } from './usage';
import { ClientStateSchema, MiddlewareRefSchema, RunErrorSchema } from './run';

/** A conversation's state between runs: history, artifacts, usage so far, and custom data. */
export const SessionStateSchema = ClientStateSchema.extend({ usage: UsageSchema.default({}) });
export type SessionState = z.infer<typeof SessionStateSchema>;

/** Where a run stands: `pending` while it runs detached, `aborting` once told to stop, then settled. */
export const SnapshotStatusSchema = z.enum(['pending', 'aborting', 'completed', 'failed', 'aborted']);

/** The record of one run of a session, chained to the one before. */
export const SnapshotSchema = z.object({
  snapshotId: z.string(),
  sessionId: z.string(),
  parentId: z.string().optional(),
  status: SnapshotStatusSchema,
  finishReason: z.string().optional(),
  error: RunErrorSchema.optional(),
  /** The run's workflow id. */
  runId: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  /** How many messages of the session's history the run left (its resume point). */
  messageCount: z.number().int(),
  /** Who sent the turn, when a client said (docs/tenants.md). */
  sentBy: PrincipalSchema.optional(),
});
export type Snapshot = z.infer<typeof SnapshotSchema>;

/** One invocation of a server-managed agent: the `invoke` update of its session. */
export const InvokeInputSchema = z.object({
  /** New messages for this run (usually one user message). */
  messages: z.array(MessageSchema).min(1),
  /** Starts the run from this snapshot's state instead of the latest. */
  snapshotId: z.string().optional(),
  /** Starts the run from the state of the snapshot of this earlier run (a task id's run). */
  fromRunId: z.string().optional(),
  /** Returns at once with a pending snapshot; the run goes on. */
  detach: z.boolean().default(false),
  /** Client-managed state: refused here (a server-managed agent keeps its own). */
  state: z.unknown().optional(),
  /** Middleware the session run gets besides the agent's own (what a delegating run hands down, e.g. its budget). */
  use: z.array(MiddlewareRefSchema).default([]),
  /**
   * Identifies the invocation: one sent again with the same id (a retried activity) gets the
   * first one's answer instead of starting another run, even after a continue-as-new.
   */
  requestId: z.string().optional(),
  /** The run this run's holds are reported to (a delegating run), and their key there, so they are decided at its root. */
  reportTo: z.object({ runId: z.string(), key: z.string() }).optional(),
  /** Who sends this turn (docs/tenants.md): recorded in its snapshot, and its run's middleware sees it. */
  sentBy: PrincipalSchema.optional(),
  /**
   * Taken only when the session belongs to exactly this principal (its memo's), else refused as a
   * session that does not exist: an access check made before sending holds even if the session
   * was started by someone else in between (docs/tenants.md).
   */
  ifBelongsTo: PrincipalSchema.optional(),
});
export type InvokeInput = z.input<typeof InvokeInputSchema>;

/** What an invocation answers. */
export const InvokeOutputSchema = z.object({
  sessionId: z.string(),
  snapshotId: z.string(),
  /** The run (workflow id). */
  runId: z.string(),
  status: SnapshotStatusSchema,
  finishReason: z.string(),
  message: MessageSchema.optional(),
  text: z.string(),
  /** The run's structured answer, when the agent has an output schema (its run's `result.output`). */
  output: z.unknown().optional(),
  artifacts: z.array(ArtifactSchema),
  /** What this run spent. */
  usage: UsageSchema,
  /** What the session has spent in all. */
  sessionUsage: UsageSchema,
  error: RunErrorSchema.optional(),
});
export type InvokeOutput = z.infer<typeof InvokeOutputSchema>;

/** The input of `sessionWorkflow` (and what it carries across continue-as-new). */
export const SessionInputSchema = z.object({
  agent: z.string().min(1),
  sessionId: z.string().min(1),
  state: SessionStateSchema.prefault({}),
  snapshots: z.array(SnapshotSchema).default([]),
  /** Runs started so far (numbers their run ids). */
  runs: z.number().int().default(0),
  /** Answers of the latest invocations that carried a request id, by id. */
  answered: z.record(z.string(), InvokeOutputSchema).default({}),
});
export type SessionInput = z.input<typeof SessionInputSchema>;

/** How many answered request ids a session remembers. */
export const KEPT_ANSWERS = 50;

/** How many settled snapshots a session carries across continue-as-new (older ones are dropped). */
export const KEPT_SNAPSHOTS = 200;

/** The longest session id a client may choose (a session's workflow id adds the agent's name, Temporal allows 1,000 characters). */
export const MAX_SESSION_ID_CHARS = 200;

/**
 * Why a session id a client chose cannot be used, or undefined when it can. The rule: 1 to 200
 * characters of letters, digits and `. _ - : @ = +`, in segments separated by single `/`, none
 * of them `run-<n>` (a session's runs have the ids `session/<agent>/<id>/run-<n>`, so such an id would
 * name another session's run).
 */
export function sessionIdProblem(sessionId: string): string | undefined {
  const rule = `a session id is 1-${MAX_SESSION_ID_CHARS} characters of letters, digits and . _ - : @ = +, in segments separated by single "/", none of them "run-<n>"`;
  if (sessionId === '') return `the session id is empty; ${rule}`;
  if (sessionId.length > MAX_SESSION_ID_CHARS) return `the session id has ${sessionId.length} characters; ${rule}`;
  const segments = sessionId.split('/');
  if (segments.some((segment) => segment === '')) return `the session id "${sessionId}" has an empty segment; ${rule}`;
  const bad = [...sessionId].find((char) => char !== '/' && !/[A-Za-z0-9._\-:@=+]/.test(char));
  if (bad !== undefined) return `the session id "${sessionId}" has the character ${JSON.stringify(bad)}; ${rule}`;
  const run = segments.find((segment) => /^run-\d+$/.test(segment));
  if (run) return `the session id "${sessionId}" has the segment "${run}", which names a session's run; ${rule}`;
  return undefined;
}

/** The workflow id of a session of an agent. */
export function sessionWorkflowId(agent: string, sessionId: string): string {
  return `session/${agent}/${sessionId}`;
}

/** Input of the `invokeSession` activity: one run of a sub-agent's session, sent by a run. */
export const InvokeSessionInputSchema = z.object({
  agent: z.string(),
  sessionId: z.string(),
  invoke: InvokeInputSchema,
  /** Makes the run idempotent across retries of the activity. */
  updateId: z.string(),
  /** Whom the sending run belongs to: a session it starts belongs to them too (docs/tenants.md). */
  principal: PrincipalSchema.optional(),
});
export type InvokeSessionInput = z.input<typeof InvokeSessionInputSchema>;

/** The session id and run number of a session run id (`session/<agent>/<sessionId>/run-<n>`). */
export function sessionOfRun(runId: string, agent: string): { sessionId: string } | undefined {
  const prefix = `session/${agent}/`;
  const match = /^(.*)\/run-\d+$/.exec(runId);
  if (!runId.startsWith(prefix) || !match) return undefined;
  return { sessionId: match[1]!.slice(prefix.length) };
}
