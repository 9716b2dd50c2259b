/**
 * What `keel ui` shows of one run: its status, conversation, the runs below it (sub-agents and
 * background tasks), the files its Filesystem tools wrote, and where the Temporal Web UI shows
 * its raw history. Read through Temporal only (queries, describe, visibility). Node side.
 */
import type { KeelClient } from '../client/keel-client';
import type { Message } from '../core/messages';
import type { RunLifecycle, RunStatus } from '../core/run';
import { GENERATE_WORKFLOW } from '../workflows/definitions';

/** A run below this one. */
export interface ChildRun {
  runId: string;
  /** `subagent` (a delegation the run waits for) or `task` (a background task). */
  kind: 'subagent' | 'task';
  agent?: string;
  /** What it was asked (its summary, `<agent>: <task>`). */
  task?: string;
  state: RunLifecycle | 'unknown';
}

/** A file a Filesystem tool of the run wrote or edited. */
export interface WrittenFile {
  path: string;
  tool: string;
  /** False when the tool answered with an error. */
  ok: boolean;
}

export interface RunView {
  runId: string;
  status: RunStatus;
  messages: Message[];
  children: ChildRun[];
  files: WrittenFile[];
  /** The run's page in the Temporal Web UI, when it is known. */
  temporalUrl?: string;
  startedAt?: string;
  endedAt?: string;
}

const STATES: Record<string, RunLifecycle> = {
  RUNNING: 'running',
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
  TERMINATED: 'terminated',
  TIMED_OUT: 'timed_out',
  CONTINUED_AS_NEW: 'running',
};

/** The runs Temporal lists as children of `runId` (sub-agents and tasks), at most 200. */
async function childrenOf(client: KeelClient, runId: string, status: RunStatus): Promise<ChildRun[]> {
  const tasks = new Map(status.tasks.map((task) => [task.runId, task]));
  const children: ChildRun[] = [];
  const query = `WorkflowType='${GENERATE_WORKFLOW}' AND ParentWorkflowId='${runId.replace(/'/g, "\\'")}'`;
  try {
    for await (const run of client.temporal.workflow.list({ query, pageSize: 200 })) {
      const summary = typeof run.memo?.prompt === 'string' ? run.memo.prompt : undefined;
      const agent = typeof run.memo?.agent === 'string' ? run.memo.agent : tasks.get(run.workflowId)?.agent;
      children.push({
        runId: run.workflowId,
        kind: tasks.has(run.workflowId) ? 'task' : 'subagent',
        ...(agent !== undefined ? { agent } : {}),
        ...(summary !== undefined ? { task: summary } : {}),
        state: STATES[run.status.name] ?? 'unknown',
      });
      tasks.delete(run.workflowId);
      if (children.length >= 200) break;
    }
  } catch {
    // Visibility without ParentWorkflowId: the tasks the run itself reports are still shown.
  }
  for (const task of tasks.values()) children.push({ runId: task.runId, kind: 'task', agent: task.agent, task: task.name ?? task.taskId, state: 'unknown' });
  return children;
}

/** The files the run's Filesystem tools (`write_file`, `edit_file`, with any prefix) were asked to write, and whether they did. */
export function writtenFiles(messages: readonly Message[]): WrittenFile[] {
  const answered = new Map<string, boolean>();
  for (const message of messages)
    for (const part of message.content)
      if ('toolResponse' in part) {
        const output = part.toolResponse.output as { error?: unknown } | undefined;
        answered.set(`${part.toolResponse.name}\u0000${part.toolResponse.ref ?? ''}`, !(output && typeof output === 'object' && 'error' in output));
      }
  const files: WrittenFile[] = [];
  for (const message of messages)
    for (const part of message.content) {
      if (!('toolRequest' in part) || !/(^|_)(write_file|edit_file)$/.test(part.toolRequest.name)) continue;
      const path = (part.toolRequest.input as { path?: unknown } | undefined)?.path;
      if (typeof path !== 'string') continue;
      const ok = answered.get(`${part.toolRequest.name}\u0000${part.toolRequest.ref ?? ''}`);
      if (ok !== undefined) files.push({ path, tool: part.toolRequest.name, ok });
    }
  return files;
}

/** Everything the run view shows of `runId`. */
export async function runView(client: KeelClient, runId: string, temporalUiUrl: string | undefined, namespace: string): Promise<RunView> {
  const handle = client.getHandle(runId);
  const [status, messages, description] = await Promise.all([handle.status(), handle.messages(0), handle.describe()]);
  const children = await childrenOf(client, runId, status);
  return {
    runId,
    status,
    messages,
    children,
    files: writtenFiles(messages),
    ...(temporalUiUrl
      ? { temporalUrl: `${temporalUiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(runId)}` }
      : {}),
    startedAt: description.startTime.toISOString(),
    ...(description.closeTime ? { endedAt: description.closeTime.toISOString() } : {}),
  };
}
