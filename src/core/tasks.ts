/**
 * Background tasks: sub-agent runs started in the background (child workflows that outlive
 * their parent if they must). A task id is `<agent>:<runId>`; what a run knows of a task is a
 * `TaskReport`. Pure: safe in workflow code.
 */
import { z } from 'zod';
import { RunErrorSchema, RunResultSchema } from './run';

/** Where a task stands: still `pending`, or settled; `aborting` once a stop reached it. */
export const TaskStatusSchema = z.enum(['pending', 'aborting', 'completed', 'failed', 'aborted', 'unknown']);
export type TaskStatus = z.infer<typeof TaskStatusSchema>;

/** A background task a run started. */
export const TaskRecordSchema = z.object({
  taskId: z.string(),
  agent: z.string(),
  /** The task's run id (its workflow id). */
  runId: z.string(),
  /** The label the model gave it. */
  name: z.string().optional(),
});
export type TaskRecord = z.infer<typeof TaskRecordSchema>;

/** What is known of one task's run. */
export const TaskReportSchema = z.object({
  runId: z.string(),
  status: TaskStatusSchema,
  /** With `completed`: the run's result. */
  result: RunResultSchema.optional(),
  /** With `failed` or `unknown`: why. */
  error: RunErrorSchema.optional(),
});
export type TaskReport = z.infer<typeof TaskReportSchema>;

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

/** The task id of a sub-agent run: `<agent>:<runId>`. */
export function taskIdOf(agent: string, runId: string): string {
  return `${agent}:${runId}`;
}
