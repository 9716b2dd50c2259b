/**
 * Background tasks of the Agents middleware (`async: true`): which tasks a conversation may
 * reach, the tasks of its earlier runs a new run follows, and the tools that check, wait for
 * and abort sub-agent runs started with `background: true`. A task id is `<agent>:<runId>`;
 * the tools accept only ids this conversation launched (started by this run's chain, or carried
 * by a delegation result in the conversation with a valid proof), so text that reaches the
 * model or a client-managed history cannot point them at another conversation's task. Runs in
 * the workflow: what a task run did is read through the run's task control (the `tasks` of the run's Agents part, activities); the shapes
 * are in core/tasks.ts.
 */
import { z } from 'zod';
import type { Message } from '../../core/messages';
import { PROOF_METADATA } from '../../core/proofs';
import { hasAnswer, isSettled, parseTaskId, type TaskReport, type TaskStatus } from '../../core/tasks';
import { subAgentAnswer, type ArtifactMerge, type MergedArtifact } from './sub-agent-results';
import type { ContributedTool, MiddlewareContext } from '../../middleware/types';
import type { AgentsPart } from './run-part';

/** Base names of the background-task tools. */
export const BACKGROUND_TOOLS = { check: 'check_background_tasks', wait: 'wait_for_background_tasks', abort: 'abort_background_tasks' } as const;

/** The background-task tools' names, prefixed as configured. */
export type BackgroundToolNames = { [tool in keyof typeof BACKGROUND_TOOLS]: string };

/** A `wait_for_background_tasks` timeout past this is no limit at all. */
const UNBOUNDED_SECONDS = 1e9;

/** What the background-task code of one Agents middleware works from. */
export interface TaskScope {
  context: MiddlewareContext;
  /** What the run lends the Agents middleware: its sub-agent runs, session runs and background tasks. */
  part: AgentsPart;
  /** Configured agent names (a task id names one of them). */
  agents: readonly string[];
  /** Tools whose results carry the task ids of launches: the delegation tools and continue_task. */
  delegationTools: ReadonlySet<string>;
}

/** What the background-task tools need besides their scope. */
export interface BackgroundToolsOptions extends TaskScope, ArtifactMerge {
  names: BackgroundToolNames;
  /** Bound on every wait, in seconds; 0 = none. */
  maxWaitSeconds: number;
}

/** The model's answer when a task starts: its id and the tools that collect or stop it. */
export function launchedResponse(names: BackgroundToolNames, agent: string, taskId: string): string {
  return `Background task ${taskId} started for agent "${agent}". Collect its result with ${names.check} or ${names.wait}, or stop it with ${names.abort}.`;
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

/**
 * Task ids (with their labels) this conversation launched: started by this run's chain, or
 * carried by a delegation result in `messages` whose proof verifies (so text planted in a
 * client-managed conversation cannot reach another conversation's task).
 */
export async function conversationTasks(
  { part, delegationTools }: Pick<TaskScope, 'part' | 'delegationTools'>,
  messages: readonly Message[],
): Promise<Map<string, string | undefined>> {
  const claimed = launchedInConversation(messages, delegationTools);
  const reachable = await part.tasks.reachable([...claimed].map(([taskId, { proof }]) => ({ taskId, ...(proof !== undefined ? { proof } : {}) })));
  const launched = new Map<string, string | undefined>();
  for (const [taskId, { name }] of claimed) if (reachable.has(taskId)) launched.set(taskId, name);
  for (const record of part.tasks.records()) launched.set(record.taskId, record.name);
  return launched;
}

/**
 * Follows the tasks earlier runs of the conversation launched (claimed by delegation results in
 * `messages`) that still run: their holds show in this run's status and are decided here.
 */
export async function followConversationTasks({ part, agents, delegationTools }: TaskScope, messages: readonly Message[]): Promise<void> {
  const claims = [...launchedInConversation(messages, delegationTools)].flatMap(([taskId, { proof }]) => {
    const parsed = parseTaskId(taskId, agents);
    return parsed ? [{ taskId, ...parsed, ...(proof !== undefined ? { proof } : {}) }] : [];
  });
  if (claims.length) await part.tasks.follow(claims);
}

/** One task in a background-task tool's output, as the model reads it. */
interface TaskEntry {
  taskId: string;
  agent?: string;
  name?: string;
  status: TaskStatus;
  response?: string;
  artifacts?: MergedArtifact[];
  error?: string;
}

/** What a background-task tool answers. */
interface TasksOutput {
  tasks?: TaskEntry[];
  timedOut?: boolean;
  note?: string;
}

/** The background-task tools of one run: their options, and the settled tasks they already reported. */
interface TaskTools extends BackgroundToolsOptions {
  /** Settled tasks already reported in this run, by task id: read and merged once. */
  settled: Map<string, TaskEntry>;
}

/** A task id in scope (this conversation launched it), parsed. */
type LiveTask = { taskId: string; agent: string; runId: string; name?: string };
/** A task id a tool was given: a task in scope, or the entry saying why it is not. */
type GivenTask = LiveTask | { entry: TaskEntry };

const TaskIdsSchema = z.object({ taskIds: z.array(z.string()).optional() }).loose();
const WaitInputSchema = TaskIdsSchema.extend({ timeoutSeconds: z.number().optional(), waitFor: z.string().optional() });

const taskIdsProperty = { type: 'array', items: { type: 'string' }, description: 'The taskId values returned by background delegations.' };

/** The answer to a call that names no task (a fresh object: workflows may share this module). */
const noIds = (): TasksOutput => ({ note: 'No task IDs given. Pass the taskId values returned by background delegations.' });

/** The check, wait and abort tools. */
export function backgroundTools(options: BackgroundToolsOptions): ContributedTool[] {
  const tools: TaskTools = { ...options, settled: new Map() };
  return [checkTool(tools), waitTool(tools), abortTool(tools)];
}

/** Resolves the ids a tool was given (each once): in scope and parseable, or an entry saying why not. */
async function resolveTasks(tools: TaskTools, taskIds: readonly string[], requestMessages: readonly Message[]): Promise<GivenTask[]> {
  const launched = await conversationTasks(tools, requestMessages);
  return [...new Set(taskIds)].map((taskId): GivenTask => {
    const parsed = parseTaskId(taskId, tools.agents);
    if (!parsed) {
      return { entry: { taskId, status: 'unknown', error: `task ID "${taskId}" does not match any configured agent (expected "<agent>:<runId>")` } };
    }
    if (!launched.has(taskId)) {
      return {
        entry: {
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
}

/** The ids a tool was given, resolved against the conversation; none is undefined (the tool answers with a note). */
async function givenTasks(tools: TaskTools, input: unknown, requestMessages: readonly Message[]): Promise<GivenTask[] | undefined> {
  const taskIds = TaskIdsSchema.safeParse(input).data?.taskIds ?? [];
  return taskIds.length ? resolveTasks(tools, taskIds, requestMessages) : undefined;
}

/**
 * The entry of a task from what its run reports. A settled task is reported once and then
 * kept (a completed one's artifacts are merged once); a completed run without an answer is a
 * failed task.
 */
function entryOf(tools: TaskTools, task: LiveTask, report: TaskReport): TaskEntry {
  const cached = tools.settled.get(task.taskId);
  if (cached) return cached;
  const base = { taskId: task.taskId, agent: task.agent, ...(task.name !== undefined ? { name: task.name } : {}) };
  let entry: TaskEntry;
  switch (report.status) {
    case 'completed': {
      const answer = subAgentAnswer(tools, task.agent, task.runId, report.result!);
      entry = hasAnswer(report.result!.finishReason) ? { ...base, status: 'completed', ...answer } : { ...base, status: 'failed', error: answer.response };
      break;
    }
    case 'failed':
      entry = { ...base, status: 'failed', error: `${report.error?.message ?? 'the task failed'}. Its run is kept; delegate the task again to retry it.` };
      break;
    case 'aborted':
      entry = { ...base, status: 'aborted', response: 'The task was stopped before it finished.' };
      break;
    case 'aborting':
      return { ...base, status: 'aborting', response: `The task was asked to stop and will settle as aborted; collect it with ${tools.names.wait}.` };
    case 'unknown':
      return {
        ...base,
        status: 'unknown',
        error: `No record of this task exists (${report.error?.message ?? 'not found'}). Delegate the task again if it is still needed.`,
      };
    default:
      return { ...base, status: 'pending' };
  }
  tools.settled.set(task.taskId, entry);
  return entry;
}

/** Entries for every id, in the order given: settled ones as first reported, live ones from `reports` (absent: pending). */
function entries(tools: TaskTools, given: readonly GivenTask[], reports: readonly TaskReport[]): TaskEntry[] {
  return given.map((task) => {
    if ('entry' in task) return task.entry;
    const report = reports.find((candidate) => candidate.runId === task.runId);
    return tools.settled.get(task.taskId) ?? entryOf(tools, task, report ?? { runId: task.runId, status: 'pending' });
  });
}

/** The tasks among `given` in scope and not yet reported settled: the ones whose runs are worth asking. */
function liveTasks(tools: TaskTools, given: readonly GivenTask[]): LiveTask[] {
  return given.filter((task): task is LiveTask => !('entry' in task) && !tools.settled.has(task.taskId));
}

/** What the runs of the live tasks among `given` say now (no activity when there are none). */
async function inspectLive(tools: TaskTools, given: readonly GivenTask[]): Promise<TaskReport[]> {
  const live = liveTasks(tools, given);
  return live.length ? tools.part.tasks.inspect(live.map((task) => task.runId)) : [];
}

/** check_background_tasks: where the tasks stand now, without waiting. */
function checkTool(tools: TaskTools): ContributedTool {
  return {
    definition: {
      name: tools.names.check,
      description: 'Reports the status and, once finished, the result of background tasks, without waiting.',
      inputSchema: { type: 'object', properties: { taskIds: taskIdsProperty } },
    },
    run: async (input, params) => {
      const given = await givenTasks(tools, input, params.requestMessages);
      if (!given) return noIds();
      return { tasks: entries(tools, given, await inspectLive(tools, given)) };
    },
  };
}

/** wait_for_background_tasks: waits for all the tasks, or the first, then reports them. */
function waitTool(tools: TaskTools): ContributedTool {
  return {
    definition: {
      name: tools.names.wait,
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
      if (taskIds.length === 0) return noIds();
      return waitOn(tools, await resolveTasks(tools, taskIds, params.requestMessages), parsed.timeoutSeconds, waitFor === 'first');
    },
  };
}

/**
 * Waits on the live tasks among `given` for the timeout asked for (0, absent or past 1e9
 * seconds: no limit), bounded by `maxWaitSeconds`; a bound of 0 seconds only looks.
 */
async function waitOn(tools: TaskTools, given: readonly GivenTask[], timeoutSeconds: number | undefined, first: boolean): Promise<TasksOutput> {
  const live = liveTasks(tools, given);
  if (live.length === 0) return { tasks: entries(tools, given, []) };
  let seconds = timeoutSeconds === undefined || timeoutSeconds === 0 || timeoutSeconds > UNBOUNDED_SECONDS ? undefined : Math.max(0, timeoutSeconds);
  if (tools.maxWaitSeconds > 0) seconds = Math.min(seconds ?? tools.maxWaitSeconds, tools.maxWaitSeconds);
  const runIds = live.map((task) => task.runId);
  const { reports, timedOut } =
    seconds === 0
      ? { reports: await tools.part.tasks.inspect(runIds), timedOut: true }
      : await tools.part.tasks.wait(runIds, { first, ...(seconds !== undefined ? { timeoutMs: seconds * 1000 } : {}) });
  const stillRunning = reports.some((report) => !isSettled(report.status));
  const output: TasksOutput = { tasks: entries(tools, given, reports) };
  if (first && !timedOut && stillRunning) output.note = 'Returned at the first task that finished; the others may still be running.';
  if (timedOut && stillRunning)
    Object.assign(output, { timedOut: true, note: 'Stopped waiting; the pending tasks are still running. Check them again later.' });
  return output;
}

/** abort_background_tasks: asks each pending task to stop; it reads `aborting` until it settles as aborted. */
function abortTool(tools: TaskTools): ContributedTool {
  return {
    definition: {
      name: tools.names.abort,
      description: 'Stops background tasks whose results are no longer needed.',
      inputSchema: { type: 'object', properties: { taskIds: taskIdsProperty } },
    },
    run: async (input, params) => {
      const given = await givenTasks(tools, input, params.requestMessages);
      if (!given) return noIds();
      const reports = await inspectLive(tools, given);
      for (const report of reports) if (report.status === 'pending') await tools.part.tasks.abort(report.runId);
      const now = reports.map((report) => (report.status === 'pending' ? { ...report, status: 'aborting' as const } : report));
      return { tasks: entries(tools, given, now) };
    },
  };
}
