/**
 * What `keel ui` shows of one run: its status, conversation, the runs below it (sub-agents and
 * background tasks), the files its Filesystem tools wrote, and where the Temporal Web UI shows
 * its raw history. Read through Temporal only (queries, describe, visibility). Node side.
 */
import { decodePayload } from '../client/decode-payload';
import { listExecutions, type ListScope } from '../node/list-executions';
import { runListing } from '../client/runs';
import type { temporal } from '@temporalio/proto';
import type { KeelClient } from '../client/keel-client';
import type { Message } from '../core/messages';
import type { RunLifecycle, RunStatus } from '../core/run';
import { GENERATE_WORKFLOW } from '../core/protocol';
import { KEEL_FORK_OF, queryString } from '../core/search-attributes';

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

/** The run's Budget, when it has one: its limit per capped field, and what it had spent when it started (a sub-agent's share of its tree). */
export interface BudgetView {
  limit: Record<string, number>;
  spent?: Record<string, number>;
}

export interface RunView {
  runId: string;
  status: RunStatus;
  budget?: BudgetView;
  messages: Message[];
  children: ChildRun[];
  files: WrittenFile[];
  /** Runs forked from this one (by the search attribute KeelForkOf; empty without it), at most 100. */
  forks: string[];
  /** The run's page in the Temporal Web UI, when it is known. */
  temporalUrl?: string;
  startedAt?: string;
  endedAt?: string;
}

/** The runs forked from `runId`, newest first (none when the namespace lacks KeelForkOf). */
async function forksOf(client: KeelClient, runId: string, scope: ListScope | undefined): Promise<string[]> {
  const forks = new Set<string>();
  try {
    for await (const run of listExecutions(client.temporal, { query: `${KEEL_FORK_OF.name}=${queryString(runId)}`, pageSize: 100, scope })) {
      forks.add(run.workflowId);
      if (forks.size >= 100) break;
    }
  } catch {
    // Not listable here (no search attribute): the view shows none.
  }
  return [...forks];
}

/** The runs Temporal lists as children of `runId` (sub-agents and tasks), at most 200. */
async function childrenOf(client: KeelClient, runId: string, status: RunStatus, scope: ListScope | undefined): Promise<ChildRun[]> {
  const tasks = new Map(status.tasks.map((task) => [task.runId, task]));
  const children: ChildRun[] = [];
  const query = `WorkflowType='${GENERATE_WORKFLOW}' AND ParentWorkflowId=${queryString(runId)}`;
  try {
    for await (const run of listExecutions(client.temporal, { query, pageSize: 200, scope })) {
      // An execution that continued as new is followed by the next of the same id.
      if (run.status.name === 'CONTINUED_AS_NEW') continue;
      // Its lifecycle as the runs list and `keel status` say it (a sub-agent waiting on a hold is `waiting`).
      const listed = runListing(run);
      const agent = listed.agent ?? tasks.get(run.workflowId)?.agent;
      children.push({
        runId: run.workflowId,
        kind: tasks.has(run.workflowId) ? 'task' : 'subagent',
        ...(agent !== undefined ? { agent } : {}),
        ...(listed.prompt !== undefined ? { task: listed.prompt } : {}),
        state: listed.state,
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

const BUDGET_NAMES = new Set(['budget', 'genkit-middleware/budget']);
/** Budgets already read, by run id (a run's middleware never changes): at most this many kept. */
const budgets = new Map<string, BudgetView | null>();
const KEPT_BUDGETS = 500;

/** `limit: { totalTokens: 10, custom: { cost: 2 } }` as `{ totalTokens: 10, 'custom.cost': 2 }`. */
function flat(value: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, entry] of Object.entries((value ?? {}) as Record<string, unknown>)) {
    if (typeof entry === 'number') out[key] = entry;
    else if (key === 'custom' && entry && typeof entry === 'object')
      for (const [name, cap] of Object.entries(entry)) if (typeof cap === 'number') out[`custom.${name}`] = cap;
  }
  return out;
}

/**
 * The run's Budget, read once from the start of its history: the middleware the run was started
 * with (its input's `use`) and its agent's (the `resolveAgent` result). Undefined without one, or
 * when the history does not say (a run from before the agent lookup was an activity).
 */
async function budgetOf(client: KeelClient, runId: string): Promise<BudgetView | undefined> {
  const known = budgets.get(runId);
  if (known !== undefined) return known ?? undefined;
  const decoded = (payloads: temporal.api.common.v1.IPayloads | null | undefined) =>
    decodePayload<{ use?: typeof refs }>(client.temporal, payloads?.payloads?.[0]);
  const refs: Array<{ name?: unknown; config?: unknown }> = [];
  const scheduled = new Map<string, string>();
  // Kept only once the agent was resolved: a run viewed before that may yet have the agent's Budget.
  let resolved = false;
  // The lookup is among the first events, but a page may hold fewer than asked (even none): follow
  // the pages until it is found or the history ends.
  let nextPageToken: Uint8Array | undefined;
  for (let page = 0; page < 10 && !resolved; page++) {
    const answer = await client.temporal.workflowService.getWorkflowExecutionHistory({
      namespace: client.temporal.options.namespace,
      execution: { workflowId: runId },
      maximumPageSize: 40,
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    for (const event of answer.history?.events ?? []) {
      const started = event.workflowExecutionStartedEventAttributes;
      if (started) refs.push(...((await decoded(started.input))?.use ?? []));
      const schedule = event.activityTaskScheduledEventAttributes;
      if (schedule?.activityType?.name) scheduled.set(String(event.eventId), schedule.activityType.name);
      const completed = event.activityTaskCompletedEventAttributes;
      if (completed && scheduled.get(String(completed.scheduledEventId)) === 'resolveAgent') {
        refs.push(...((await decoded(completed.result))?.use ?? []));
        resolved = true;
        break;
      }
    }
    if (!answer.nextPageToken?.length) break;
    nextPageToken = answer.nextPageToken;
  }
  const ref = refs.find((candidate) => typeof candidate.name === 'string' && BUDGET_NAMES.has(candidate.name));
  const config = ref?.config as { limit?: unknown; spent?: unknown } | undefined;
  const budget = config?.limit ? { limit: flat(config.limit), ...(config.spent ? { spent: flat(config.spent) } : {}) } : undefined;
  if (resolved || budget) {
    if (budgets.size >= KEPT_BUDGETS) budgets.delete(budgets.keys().next().value!);
    budgets.set(runId, budget ?? null);
  }
  return budget;
}

/** Everything the run view shows of `runId` (its children and forks: those `scope` admits). */
export async function runView(
  client: KeelClient,
  runId: string,
  { temporalUiUrl, namespace, scope }: { temporalUiUrl: string | undefined; namespace: string; scope?: ListScope | undefined },
): Promise<RunView> {
  const handle = client.getHandle(runId);
  // One query at a time: two at once on a run that has just ended can leave one unanswered for the
  // server's whole query timeout (30 s) when the worker is busy (seen with test/ui-server.test.ts under load).
  const [status, description] = await Promise.all([handle.status(), handle.describe()]);
  const messages = await handle.messages(0);
  const [children, budget, forks] = await Promise.all([
    childrenOf(client, runId, status, scope),
    budgetOf(client, runId).catch(() => undefined),
    forksOf(client, runId, scope),
  ]);
  return {
    runId,
    status,
    ...(budget ? { budget } : {}),
    messages,
    children,
    files: writtenFiles(messages),
    forks,
    ...(temporalUiUrl
      ? { temporalUrl: `${temporalUiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(runId)}` }
      : {}),
    startedAt: description.startTime.toISOString(),
    ...(description.closeTime ? { endedAt: description.closeTime.toISOString() } : {}),
  };
}
