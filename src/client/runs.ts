/**
 * The runs of a namespace, for `keel list` and `KeelClient.list`: generate runs listed through
 * Temporal's visibility, newest first, filtered by agent and lifecycle on the KeelAgent and
 * KeelStatus search attributes when the namespace has them (else by what each run's memo and
 * Temporal's execution status say, which cannot tell `waiting` from `running` without the memo's
 * holds). Reads Temporal only: no worker needed. Node side.
 */
import { listExecutions, type ListScope } from '../node/list-executions';
import { ServiceError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import { z } from 'zod';
import { HOLDS_MEMO_KEY, MemoHoldSchema, RunLifecycleSchema, type RunLifecycle } from '../core/run';
import { KEEL_AGENT, KEEL_OWNER, KEEL_STATUS, KEEL_TENANT, queryString } from '../core/search-attributes';
import { principalOfMemo } from '../core/principal';
import { runLabel } from '../core/run-label';
import { GENERATE_WORKFLOW } from '../core/protocol';

/** One run as `keel list` shows it. */
export interface RunListing {
  runId: string;
  /** A short name for it: a sub-agent's id after its parent's (`clerk-1`), else the id with each UUID cut to its first 8 digits (`run-5a090c1c`). */
  label: string;
  /** The run that started it (a sub-agent's or a background task's parent), when Temporal records one. */
  parentId?: string;
  agent?: string;
  state: RunLifecycle;
  /** When it started and (if it ended) ended, ISO 8601. */
  startedAt: string;
  endedAt?: string;
  /** How its prompt starts (as keel's client started it). */
  prompt?: string;
  /**
   * Its own pending holds, when it has any: a sub-agent's hold, which the runs above it show
   * too, is counted on the sub-agent's row only.
   */
  holds?: number;
  /** Whom it belongs to (docs/tenants.md), when it was started for someone. */
  tenant?: string;
  owner?: string;
}

/** What to list. */
export interface ListRunsOptions {
  agent?: string;
  state?: RunLifecycle;
  /** Only the runs of this tenant, or started by this owner (docs/tenants.md). */
  tenant?: string;
  owner?: string;
  /** At most this many (default 50). */
  limit?: number;
  /** Only runs started at or after this time. */
  startedAfter?: Date;
}

/** Temporal's execution status, by the lifecycle it stands for once a run has ended. */
const ENDED: Partial<Record<RunLifecycle, string>> = {
  completed: 'Completed',
  failed: 'Failed',
  cancelled: 'Canceled',
  terminated: 'Terminated',
  timed_out: 'TimedOut',
};

/** The lifecycle an ended execution stands for, by Temporal's status name. */
const BY_TEMPORAL: Record<string, RunLifecycle> = {
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
  TERMINATED: 'terminated',
  TIMED_OUT: 'timed_out',
};

/** The visibility query for `options`, with or without keel's search attributes. */
function queryOf({ agent, state, startedAfter, tenant, owner }: ListRunsOptions, indexed: boolean): string {
  const clauses = [`WorkflowType='${GENERATE_WORKFLOW}'`];
  if (startedAfter !== undefined) clauses.push(`StartTime >= '${startedAfter.toISOString()}'`);
  if (indexed && agent !== undefined) clauses.push(`${KEEL_AGENT.name}=${queryString(agent)}`);
  if (indexed && tenant !== undefined) clauses.push(`${KEEL_TENANT.name}=${queryString(tenant)}`);
  if (indexed && owner !== undefined) clauses.push(`${KEEL_OWNER.name}=${queryString(owner)}`);
  if (state === 'waiting' || state === 'running') {
    clauses.push(`ExecutionStatus='Running'`);
    if (indexed) clauses.push(`${KEEL_STATUS.name}='${state}'`);
  } else if (state !== undefined) clauses.push(`ExecutionStatus='${ENDED[state]!}'`);
  return clauses.join(' AND ');
}

/**
 * A listed run as keel sees it: its agent and lifecycle from its search attributes, else its
 * memo and Temporal's status (the same in `keel list`, the UI's runs list and its run view).
 */
export function runListing(run: Omit<WorkflowExecutionInfo, 'raw'>): RunListing {
  const agentAttribute = run.typedSearchAttributes.get(KEEL_AGENT);
  const statusAttribute = RunLifecycleSchema.safeParse(run.typedSearchAttributes.get(KEEL_STATUS));
  const holds = z.array(MemoHoldSchema).safeParse(run.memo?.[HOLDS_MEMO_KEY]);
  const pending = holds.success ? holds.data.length : 0;
  // A hold with a path is a run's below, which lists it as its own.
  const own = holds.success ? holds.data.filter((hold) => !hold.path?.length).length : 0;
  const parentId = run.parentExecution?.workflowId ?? undefined;
  const state: RunLifecycle =
    run.status.name === 'RUNNING'
      ? statusAttribute.success
        ? statusAttribute.data
        : pending
          ? 'waiting'
          : 'running'
      : (BY_TEMPORAL[run.status.name] ?? 'failed');
  // A session's turn is a run of the session's agent (`session/<agent>/<id>/run-<n>`), indexed or not yet.
  const sessionAgent = parentId?.startsWith('session/') && run.workflowId.startsWith(`${parentId}/run-`) ? parentId.split('/')[1] : undefined;
  const agent = agentAttribute ?? (typeof run.memo?.agent === 'string' ? run.memo.agent : sessionAgent);
  const { tenant, owner } = principalOfMemo(run.memo);
  return {
    runId: run.workflowId,
    label: runLabel(run.workflowId, parentId),
    ...(parentId ? { parentId } : {}),
    ...(agent !== undefined ? { agent } : {}),
    state,
    startedAt: run.startTime.toISOString(),
    ...(run.closeTime ? { endedAt: run.closeTime.toISOString() } : {}),
    ...(typeof run.memo?.prompt === 'string' ? { prompt: run.memo.prompt } : {}),
    ...(state === 'waiting' && own ? { holds: own } : {}),
    ...(tenant !== undefined ? { tenant } : {}),
    ...(owner !== undefined ? { owner } : {}),
  };
}

/** The namespace's generate runs matching `options`, newest first (as Temporal lists them); with `scope`, only those it admits. */
export async function listRuns(client: Client, options: ListRunsOptions = {}, scope?: ListScope): Promise<RunListing[]> {
  const limit = options.limit ?? 50;
  const collect = async (indexed: boolean) => {
    const found: RunListing[] = [];
    for await (const run of listExecutions(client, { query: queryOf(options, indexed), pageSize: Math.min(limit, 100), scope })) {
      // A run that continued as new goes on in a later execution of the same id, listed on its own.
      if (run.status.name === 'CONTINUED_AS_NEW') continue;
      const shown = runListing(run);
      if (!indexed && options.agent !== undefined && shown.agent !== options.agent) continue;
      if (!indexed && ((options.tenant !== undefined && shown.tenant !== options.tenant) || (options.owner !== undefined && shown.owner !== options.owner)))
        continue;
      if (!indexed && (options.state === 'waiting' || options.state === 'running') && shown.state !== options.state) continue;
      found.push(shown);
      if (found.length >= limit) break;
    }
    return found;
  };
  try {
    return await collect(true);
  } catch (error) {
    // Without keel's search attributes the query is refused: then filter what Temporal lists.
    if (!(error instanceof ServiceError) || !/KeelStatus|KeelAgent|KeelTenant|KeelOwner|search attribute/i.test(error.message)) throw error;
    return collect(false);
  }
}
