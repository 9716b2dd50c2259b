/**
 * What the Agents built-in gets of its run where it is created (`AgentsPart`: its sub-agent
 * runs, session runs and background tasks, built by feature.ts from run-agent.ts and
 * task-control.ts), and the doors of the activities those use, whose Node half is activities/.
 * Pure: runs in the workflow.
 */
import { z } from 'zod';
import type { Artifact } from '../../core/artifacts';
import { KeelError } from '../../core/errors';
import type { Message } from '../../core/messages';
import type { RunResult } from '../../core/run';
import { InvokeOutputSchema, InvokeSessionInputSchema, type InvokeOutput } from '../../core/session';
import { AwaitTasksInputSchema, AwaitTasksResultSchema, InspectTasksInputSchema, TaskReportSchema, type TaskRecord, type TaskReport } from '../../core/tasks';
import { defineActivity } from '../../middleware/activity-door';

/** A run of another agent that a middleware starts (a sub-agent). */
export interface AgentRunOptions {
  /** The agent, by registered name. */
  agent: string;
  /** Its conversation: usually one user message with the task. */
  messages: Message[];
  /** Artifacts it starts with. */
  artifacts?: Artifact[];
}

/** How a sub-agent run ended: its result, or the error it failed with. */
export type AgentRunOutcome = { runId: string; result: RunResult } | { runId: string; error: KeelError };

/** A run's background tasks: sub-agent runs it starts without waiting, and asks about later. */
export interface TaskControl {
  /** Starts a sub-agent run in the background (it outlives this run if it must); returns its record. */
  start: (options: AgentRunOptions & { name?: string }) => Promise<TaskRecord>;
  /** The tasks this run started. */
  records: () => readonly TaskRecord[];
  /** Where each task run stands now (`aborting` once this run asked it to stop). */
  inspect: (runIds: readonly string[]) => Promise<TaskReport[]>;
  /** Waits until the tasks settle, or the first does, or `timeoutMs` passes (undefined: no limit). */
  wait: (runIds: readonly string[], options: { timeoutMs?: number; first: boolean }) => Promise<{ reports: TaskReport[]; timedOut: boolean }>;
  /** Asks a task run to stop; it settles as `aborted`. */
  abort: (runId: string) => Promise<void>;
  /**
   * Proofs that this run handed out these task ids (by id), for the tool response that carries
   * them; empty for a run from before proofs.
   */
  prove: (taskIds: readonly string[]) => Promise<Record<string, string>>;
  /**
   * The task ids a conversation may reach, of those it claims: the ones this run's chain started,
   * and the ones whose proof verifies (a client-managed conversation carried from an earlier run).
   * A run from before proofs trusts every claim, as it did then.
   */
  reachable: (claims: ReadonlyArray<{ taskId: string; proof?: string }>) => Promise<Set<string>>;
  /**
   * Follows tasks an earlier run of the conversation started (ids the conversation claims, with
   * their proofs): the ones that may be reached and still run report their holds to this run from
   * now on, so they show in its status and are decided here. A run from before this does nothing.
   */
  follow: (claims: ReadonlyArray<{ taskId: string; agent: string; runId: string; proof?: string }>) => Promise<void>;
}

/** One run of a server-managed sub-agent's session. */
export interface SessionRunOptions {
  agent: string;
  messages: Message[];
  /** The session; by default a new one for this run (`<runId>/<agent>-<n>`). */
  sessionId?: string;
  /** Start from the snapshot of this earlier run (a task id's run). */
  fromRunId?: string;
  /** Answer at once with a pending snapshot; the run goes on as a background task. */
  detach?: boolean;
}

/**
 * Runs another agent as a child run (a child workflow) and waits for it. Its usage counts in this
 * run's usage. A failed run comes back as `{ error }`; a cancelled one cancels this.
 */
export type AgentRunner = (options: AgentRunOptions) => Promise<AgentRunOutcome>;

/**
 * Runs a run of a server-managed agent's session and waits for it (or, detached, for its
 * pending snapshot, recorded as a background task). Its usage counts in this run's. A failed
 * turn comes back as `{ error }`.
 */
export type SessionRunner = (options: SessionRunOptions & { name?: string }) => Promise<{ output: InvokeOutput } | { error: KeelError }>;

/** What a run lends its Agents middleware (each member built the first time it is used). */
export interface AgentsPart {
  /** Sub-agent runs (delegations). */
  readonly runAgent: AgentRunner;
  /** Runs of server-managed sub-agents' sessions. */
  readonly invokeSession: SessionRunner;
  /** The run's background tasks (`async`). */
  readonly tasks: TaskControl;
}

/** Refuses what only a run can do: outside one (the middleware harness) there are no child runs to start. */
const outsideARun = (what: string) => (): never => {
  throw new KeelError(
    'FAILED_PRECONDITION',
    `agents: ${what} runs in a run of its own (a child workflow); test delegation in a run, with a worker (docs/testing.md)`,
  );
};

/** The Agents middleware's part outside a run (created by hand, or in the middleware harness): each use says it needs a run. */
export const OUTSIDE_A_RUN: AgentsPart = {
  runAgent: outsideARun('a sub-agent'),
  invokeSession: outsideARun("a session's sub-agent"),
  tasks: {
    start: outsideARun('a background task'),
    records: () => [],
    inspect: outsideARun('a background task'),
    wait: outsideARun('a background task'),
    abort: outsideARun('a background task'),
    prove: async () => ({}),
    reachable: async () => new Set<string>(),
    follow: async () => undefined,
  },
};

/** `inspectTasks`: reads where background tasks (sub-agent runs) stand. */
export const inspectTasksDoor = defineActivity({
  name: 'inspectTasks',
  input: InspectTasksInputSchema,
  output: z.array(TaskReportSchema),
  // Temporal unreachable for a while: keep trying (the reads are idempotent) rather than fail the run.
  options: { startToCloseTimeout: '1 minute', retry: { initialInterval: '1 second', maximumInterval: '10 seconds' }, scheduleToCloseTimeout: '10 minutes' },
  describe: () => 'inspect background tasks',
});

/** `awaitTasks`: waits, heartbeating, until background tasks settle (or the first does, or a deadline). */
export const awaitTasksDoor = defineActivity({
  name: 'awaitTasks',
  input: AwaitTasksInputSchema,
  output: AwaitTasksResultSchema,
  describe: () => 'wait for background tasks',
});

/** `invokeSession`: one run of a sub-agent's session (update-with-start), waited for while heartbeating. */
export const invokeSessionDoor = defineActivity({
  name: 'invokeSession',
  input: InvokeSessionInputSchema,
  output: InvokeOutputSchema,
  describe: ({ agent }) => `session run of ${agent}`,
});
