/**
 * Background tasks: sub-agent runs started in the background (child workflows that outlive
 * their parent if they must). A task id is `<agent>:<runId>`. Two shapes matter to a user:
 * what a run stores of a task it started (`TaskRecord`, in its state and status) and what a
 * client shows of one (`TaskView`, `RunHandle.tasks()` and `keel tasks`). Between them,
 * `TaskReport` is what Temporal says of a task's run (the task activities' answer). Pure:
 * safe in workflow code.
 */
import { z } from 'zod';
import { RunErrorSchema, RunResultSchema, type MemoHold } from './run';

/** Where a task stands: still `pending`, or settled; `aborting` once a stop reached it. */
export const TaskStatusSchema = z.enum(['pending', 'aborting', 'completed', 'failed', 'aborted', 'unknown']);
export type TaskStatus = z.infer<typeof TaskStatusSchema>;

/**
 * A background task a run started: what the run stores (`RunState.tasks`, carried through
 * continue-as-new) and lists in its status. (`RunStatusSchema` spells the same shape out, as
 * this module imports that one.)
 */
export const TaskRecordSchema = z.object({
  taskId: z.string(),
  agent: z.string(),
  /** The task's run id (its workflow id). */
  runId: z.string(),
  /** The label the model gave it. */
  name: z.string().optional(),
});
export type TaskRecord = z.infer<typeof TaskRecordSchema>;

/** What is known of one task's run, read from Temporal. */
export const TaskReportSchema = z.object({
  runId: z.string(),
  status: TaskStatusSchema,
  /** With `completed`: the run's result. */
  result: RunResultSchema.optional(),
  /** With `failed` or `unknown`: why. */
  error: RunErrorSchema.optional(),
});
export type TaskReport = z.infer<typeof TaskReportSchema>;

/** A background task as a client shows it (`RunHandle.tasks()`, `keel tasks`, a run's `task` events). */
export interface TaskView {
  taskId: string;
  agent: string;
  /** The label the model gave it. */
  name?: string;
  /** `waiting`: pending, with holds waiting for a decision (in `interrupts`). */
  status: TaskStatus | 'waiting';
  /** With `waiting`: the task's pending holds, each with the commands that decide it on the task's own run. */
  interrupts?: Array<MemoHold & { approve?: string; deny?: string; decide: string }>;
  /** With `completed`: the task's final text. */
  result?: string;
  /** With `failed` or `unknown`: why. */
  error?: { status: string; message: string };
}

/** Input of the `inspectTasks` activity. */
export const InspectTasksInputSchema = z.object({ runIds: z.array(z.string()) });
export type InspectTasksInput = z.infer<typeof InspectTasksInputSchema>;

/** Input of the `awaitTasks` activity. */
export const AwaitTasksInputSchema = z.object({
  runIds: z.array(z.string()),
  /** Epoch ms to stop waiting at; absent = until the tasks settle. */
  deadline: z.number().optional(),
  /** Return at the first task that settles rather than when all have. */
  first: z.boolean().default(false),
});
export type AwaitTasksInput = z.input<typeof AwaitTasksInputSchema>;

/** The `awaitTasks` activity's answer. */
export const AwaitTasksResultSchema = z.object({ reports: z.array(TaskReportSchema), timedOut: z.boolean() });
export type AwaitTasksResult = z.infer<typeof AwaitTasksResultSchema>;

/** True for a task that will not change any more by itself. */
export function isSettled(status: TaskStatus): boolean {
  return status !== 'pending' && status !== 'aborting';
}

/** Finish reasons of a sub-agent run that carry an answer (the others explain why there is none). */
const ANSWER_FINISH_REASONS = new Set(['stop', 'other', 'unknown']);

/** True when a sub-agent run that finished for `finishReason` answered its task; otherwise the task failed. */
export function hasAnswer(finishReason: string): boolean {
  return ANSWER_FINISH_REASONS.has(finishReason);
}

/** The task id of a sub-agent run: `<agent>:<runId>`. */
export function taskIdOf(agent: string, runId: string): string {
  return `${agent}:${runId}`;
}

/**
 * The agent and run id of a task id: the LONGEST of `agents` followed by `:` and a non-empty
 * rest (an agent name may hold a colon too).
 */
export function parseTaskId(taskId: string, agents: readonly string[]): { agent: string; runId: string } | undefined {
  const agent = [...agents].sort((a, b) => b.length - a.length).find((name) => taskId.startsWith(`${name}:`) && taskId.length > name.length + 1);
  return agent ? { agent, runId: taskId.slice(agent.length + 1) } : undefined;
}

/** The record of a task started for `agent` as run `runId`, with the label the model gave it. */
export function taskRecord({ agent, runId, name }: { agent: string; runId: string; name?: string | undefined }): TaskRecord {
  return { taskId: taskIdOf(agent, runId), agent, runId, ...(name !== undefined ? { name } : {}) };
}

/**
 * What a client shows of a task from what its run reports: `waiting` for a pending one with
 * holds (`interrupts`, given with their commands); a run that finished without an answer
 * (blocked, length, ...) failed as a task, as the Agents middleware's tools report it.
 */
export function taskView({ taskId, agent, name }: TaskRecord, report: TaskReport, interrupts: NonNullable<TaskView['interrupts']> = []): TaskView {
  if (report.status === 'pending' && interrupts.length) return { taskId, agent, ...(name !== undefined ? { name } : {}), status: 'waiting', interrupts };
  const answered = !report.result || hasAnswer(report.result.finishReason);
  return {
    taskId,
    agent,
    ...(name !== undefined ? { name } : {}),
    status: answered ? report.status : 'failed',
    ...(report.result && answered ? { result: report.result.text } : {}),
    ...(report.result && !answered ? { error: { status: 'ABORTED', message: `the run ended as "${report.result.finishReason}" without an answer` } } : {}),
    ...(report.error ? { error: report.error } : {}),
  };
}
