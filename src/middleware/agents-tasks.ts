/**
 * The background-task tools of the Agents middleware (`async: true`): check, wait for and
 * abort sub-agent runs started with `background: true`. A task id is `<agent>:<runId>`; the
 * tools accept only ids this conversation launched (started by this run's chain, or carried by
 * a delegation result in the conversation with a valid proof), so text that reaches the model
 * or a client-managed history cannot point them at another conversation's task. Runs in the workflow; what a task run did is read through
 * activities.
 */
import { z } from 'zod';
import type { Message } from '../core/messages';
import type { RunResult } from '../core/run';
import { isSettled, type TaskReport, type TaskStatus } from '../core/tasks';
import type { ContributedTool, MiddlewareContext } from './types';
import { PROOF_METADATA } from '../core/proofs';

/** Base names of the background-task tools. */
export const BACKGROUND_TOOLS = { check: 'check_background_tasks', wait: 'wait_for_background_tasks', abort: 'abort_background_tasks' } as const;

/** A `wait_for_background_tasks` timeout past this is no limit at all. */
const UNBOUNDED_SECONDS = 1e9;

/** What the tools report of one task. */
export interface TaskRow {
  taskId: string;
  agent?: string;
  name?: string;
  status: TaskStatus;
  response?: string;
  artifacts?: Array<{ name: string; content?: string }>;
  error?: string;
}

/** What a background-task tool answers. */
export interface TasksOutput {
  tasks?: TaskRow[];
  timedOut?: boolean;
  note?: string;
}

/** What the background tools need from the Agents middleware. */
export interface BackgroundToolsOptions {
  context: MiddlewareContext;
  /** Configured agent names. */
  agents: readonly string[];
  /** The tool names, prefixed as configured. */
  names: { check: string; wait: string; abort: string };
  /** Delegation tool names (their results carry the task ids of launches). */
  delegationTools: ReadonlySet<string>;
  /** Bound on every wait, in seconds; 0 = none. */
  maxWaitSeconds: number;
  /** The row of a completed task: its answer and merged artifacts (or why it has no answer). */
  completed: (agent: string, runId: string, result: RunResult) => Pick<TaskRow, 'status' | 'response' | 'artifacts' | 'error'>;
}

/**
 * The agent and run id of a task id: the LONGEST configured agent name followed by `:` and a
 * non-empty rest.
 */
export function parseTaskId(taskId: string, agents: readonly string[]): { agent: string; runId: string } | undefined {
  const agent = [...agents].sort((a, b) => b.length - a.length).find((name) => taskId.startsWith(`${name}:`) && taskId.length > name.length + 1);
  return agent ? { agent, runId: taskId.slice(agent.length + 1) } : undefined;
}

/**
 * Task ids (with their labels) this conversation launched: started by this run's chain, or
 * carried by a delegation result in `messages` whose proof verifies (so text planted in a
 * client-managed conversation cannot reach another conversation's task).
 */
export async function conversationTasks(
  context: MiddlewareContext,
  messages: readonly Message[],
  delegationTools: ReadonlySet<string>,
): Promise<Map<string, string | undefined>> {
  const claimed = launchedInConversation(messages, delegationTools);
  const reachable = await context.tasks.reachable([...claimed].map(([taskId, { proof }]) => ({ taskId, ...(proof !== undefined ? { proof } : {}) })));
  const launched = new Map<string, string | undefined>();
  for (const [taskId, { name }] of claimed) if (reachable.has(taskId)) launched.set(taskId, name);
  for (const record of context.tasks.records()) launched.set(record.taskId, record.name);
  return launched;
}

/** Task ids carried by delegation results in the conversation, with their labels and proofs. */
export function launchedInConversation(messages: readonly Message[], delegationTools: ReadonlySet<string>): Map<string, { name?: string; proof?: string }> {
  const found = new Map<string, { name?: string; proof?: string }>();
  for (const message of messages) {
    for (const part of message.content) {
      if (!('toolResponse' in part) || !delegationTools.has(part.toolResponse.name)) continue;
      const output = part.toolResponse.output as { taskId?: unknown; name?: unknown } | undefined;
      if (typeof output?.taskId !== 'string') continue;
      const proof = part.metadata?.[PROOF_METADATA.task];
      found.set(output.taskId, { ...(typeof output.name === 'string' ? { name: output.name } : {}), ...(typeof proof === 'string' ? { proof } : {}) });
    }
  }
  return found;
}

const TaskIdsSchema = z.object({ taskIds: z.array(z.string()).optional() }).loose();
const WaitInputSchema = TaskIdsSchema.extend({ timeoutSeconds: z.number().optional(), waitFor: z.string().optional() });

const taskIdsProperty = { type: 'array', items: { type: 'string' }, description: 'The taskId values returned by background delegations.' };

/** The check, wait and abort tools. */
export function backgroundTools({ context, agents, names, delegationTools, maxWaitSeconds, completed }: BackgroundToolsOptions): ContributedTool[] {
  /** Settled rows already reported in this run: read and merged once. */
  const settledRows = new Map<string, TaskRow>();

  /** A task in scope, or the row saying why an id is not. */
  type Live = { taskId: string; agent: string; runId: string; name?: string };
  type Resolved = Live | { row: TaskRow };

  /** Resolves the ids a tool was given: in scope and parseable, or a row saying why not. */
  const resolve = async (taskIds: readonly string[], requestMessages: readonly Message[]): Promise<Resolved[]> => {
    const launched = await conversationTasks(context, requestMessages, delegationTools);
    return [...new Set(taskIds)].map((taskId): Resolved => {
      const parsed = parseTaskId(taskId, agents);
      if (!parsed) {
        return { row: { taskId, status: 'unknown', error: `task ID "${taskId}" does not match any configured agent (expected "<agent>:<runId>")` } };
      }
      if (!launched.has(taskId)) {
        return {
          row: {
            taskId,
            agent: parsed.agent,
            status: 'unknown',
            error: 'This conversation did not launch this task, so it cannot be reached from here. Delegate the task again if it is still needed.',
          },
        };
      }
      const label = launched.get(taskId);
      return { taskId, ...parsed, ...(label !== undefined ? { name: label } : {}) };
    });
  };

  /** The row of a task from what its run reports. */
  const rowOf = (task: Live, report: TaskReport): TaskRow => {
    const cached = settledRows.get(task.taskId);
    if (cached) return cached;
    const base = { taskId: task.taskId, agent: task.agent, ...(task.name !== undefined ? { name: task.name } : {}) };
    let row: TaskRow;
    switch (report.status) {
      case 'completed':
        row = { ...base, ...completed(task.agent, task.runId, report.result!) };
        break;
      case 'failed':
        row = { ...base, status: 'failed', error: `${report.error?.message ?? 'the task failed'}. Its run is kept; delegate the task again to retry it.` };
        break;
      case 'aborted':
        row = { ...base, status: 'aborted', response: 'The task was stopped before it finished.' };
        break;
      case 'aborting':
        return { ...base, status: 'aborting', response: `The task was asked to stop and will settle as aborted; collect it with ${names.wait}.` };
      case 'unknown':
        return {
          ...base,
          status: 'unknown',
          error: `No record of this task exists (${report.error?.message ?? 'not found'}). Delegate the task again if it is still needed.`,
        };
      default:
        return { ...base, status: 'pending' };
    }
    settledRows.set(task.taskId, row);
    return row;
  };

  /** Rows for every id, in the order given: settled ones from the cache, live ones from `reports`. */
  const rows = (resolved: readonly Resolved[], reports: readonly TaskReport[]): TaskRow[] =>
    resolved.map((task) => {
      if ('row' in task) return task.row;
      const report = reports.find((candidate) => candidate.runId === task.runId);
      return settledRows.get(task.taskId) ?? rowOf(task, report ?? { runId: task.runId, status: 'pending' });
    });

  const live = (resolved: readonly Resolved[]) => resolved.filter((task): task is Live => !('row' in task) && !settledRows.has(task.taskId));
  /** What the runs of the tasks not yet reported settled say now. */
  const inspectLive = async (resolved: readonly Resolved[]): Promise<TaskReport[]> => {
    const pending = live(resolved);
    return pending.length ? context.tasks.inspect(pending.map((task) => task.runId)) : [];
  };
  /** The ids a tool was given, resolved against the conversation; none is a note. */
  const given = async (input: unknown, requestMessages: readonly Message[]): Promise<Resolved[] | undefined> => {
    const taskIds = TaskIdsSchema.safeParse(input).data?.taskIds ?? [];
    return taskIds.length ? resolve(taskIds, requestMessages) : undefined;
  };
  const noIds: TasksOutput = { note: 'No task IDs given. Pass the taskId values returned by background delegations.' };

  const check: ContributedTool = {
    definition: {
      name: names.check,
      description: 'Reports the status and, once finished, the result of background tasks, without waiting.',
      inputSchema: { type: 'object', properties: { taskIds: taskIdsProperty } },
    },
    run: async (input, params) => {
      const resolved = await given(input, params.requestMessages);
      if (!resolved) return noIds;
      return { tasks: rows(resolved, await inspectLive(resolved)) };
    },
  };

  const wait: ContributedTool = {
    definition: {
      name: names.wait,
      description: 'Waits until background tasks finish (all, or the first), up to a timeout, and reports them.',
      inputSchema: {
        type: 'object',
        properties: {
          taskIds: taskIdsProperty,
          timeoutSeconds: { type: 'number', description: 'How long to wait at most; 0 or omitted waits until they finish.' },
          waitFor: { type: 'string', enum: ['all', 'first'], description: '"all" (default) or "first".' },
        },
      },
    },
    run: async (input, params) => {
      const parsed = WaitInputSchema.safeParse(input).data ?? {};
      const waitFor = parsed.waitFor ?? 'all';
      if (waitFor !== 'all' && waitFor !== 'first') return { note: `waitFor must be "all" or "first", not "${waitFor}".` };
      const taskIds = parsed.taskIds ?? [];
      if (taskIds.length === 0) return noIds;
      return waitOn(await resolve(taskIds, params.requestMessages), parsed.timeoutSeconds, waitFor === 'first');
    },
  };

  /** Waits on the live tasks among `resolved`, within the timeout asked for and `maxWaitSeconds`. */
  async function waitOn(resolved: readonly Resolved[], timeoutSeconds: number | undefined, first: boolean): Promise<TasksOutput> {
    const pending = live(resolved);
    if (pending.length === 0) return { tasks: rows(resolved, []) };
    let seconds = timeoutSeconds === undefined || timeoutSeconds === 0 || timeoutSeconds > UNBOUNDED_SECONDS ? undefined : Math.max(0, timeoutSeconds);
    if (maxWaitSeconds > 0) seconds = Math.min(seconds ?? maxWaitSeconds, maxWaitSeconds);
    const runIds = pending.map((task) => task.runId);
    const { reports, timedOut } =
      seconds === 0
        ? { reports: await context.tasks.inspect(runIds), timedOut: true }
        : await context.tasks.wait(runIds, { first, ...(seconds !== undefined ? { timeoutMs: seconds * 1000 } : {}) });
    const stillRunning = reports.some((report) => !isSettled(report.status));
    const output: TasksOutput = { tasks: rows(resolved, reports) };
    if (first && !timedOut && stillRunning) output.note = 'Returned at the first task that finished; the others may still be running.';
    if (timedOut && stillRunning)
      Object.assign(output, { timedOut: true, note: 'Stopped waiting; the pending tasks are still running. Check them again later.' });
    return output;
  }

  const abort: ContributedTool = {
    definition: {
      name: names.abort,
      description: 'Stops background tasks whose results are no longer needed.',
      inputSchema: { type: 'object', properties: { taskIds: taskIdsProperty } },
    },
    run: async (input, params) => {
      const resolved = await given(input, params.requestMessages);
      if (!resolved) return noIds;
      const reports = await inspectLive(resolved);
      for (const report of reports) if (report.status === 'pending') await context.tasks.abort(report.runId);
      const now = reports.map((report) => (report.status === 'pending' ? { ...report, status: 'aborting' as const } : report));
      return { tasks: rows(resolved, now) };
    },
  };

  return [check, wait, abort];
}
