/**
 * Every pending hold of a namespace, for `keel holds`: the runs Temporal lists as waiting
 * (KeelStatus, when the namespace has keel's search attributes; else every open run), each
 * hold read from the run's memo (so no worker is needed) or, for a run from before the memo,
 * its status query. A hold that a parent run shows (a sub-agent's, with its path) is listed
 * once, at the topmost run that shows it, which is where a decision for it is sent.
 * Node side.
 */
import { listExecutions } from '../node/list-executions';
import { ServiceError, type Client } from '@temporalio/client';
import { HOLDS_MEMO_KEY, MemoHoldSchema, type MemoHold } from '../core/run';
import { decideCommands } from './decide-commands';
import { takesApproval } from '../core/holds';
import { z } from 'zod';
import { KEEL_AGENT, KEEL_STATUS } from '../core/search-attributes';
import { GENERATE_WORKFLOW, statusQuery } from '../workflows/definitions';

/** One pending hold and the commands that decide it. */
export interface HoldView extends MemoHold {
  /** The run a decision goes to (the topmost that shows the hold). */
  runId: string;
  /** That run's agent, when Temporal says. */
  agent?: string;
  /** The command that approves it (for a hold whose decision takes `{ approved }`). */
  approve?: string;
  /** The command that denies it (likewise). */
  deny?: string;
  /** The command that decides it with a JSON value matching its decision schema (`keel status` shows the schema). */
  decide: string;
}

/** How long a run from before the memo may take to answer its status query. */
const QUERY_MS = 5000;

/** The (run, hold id) pairs a hold shown under `runId` with a path stands for further down the tree. */
function covered(hold: MemoHold): Array<[string, string]> {
  const segments = hold.id.split('/');
  return (hold.path ?? []).map((runId, index) => [runId, segments.slice(index + 1).join('/')] as [string, string]);
}

/** Lists the open keel runs that may hold something, with their memo. */
async function* waitingRuns(client: Client): AsyncGenerator<{ runId: string; agent?: string; memo?: Record<string, unknown> }> {
  const base = `WorkflowType='${GENERATE_WORKFLOW}' AND ExecutionStatus='Running'`;
  let query = `${base} AND ${KEEL_STATUS.name}='waiting'`;
  try {
    // Without keel's search attributes the query is refused: then every open run is looked at.
    const first = listExecutions(client, { query, pageSize: 1000 });
    for await (const run of first) yield { runId: run.workflowId, ...(run.memo ? { memo: run.memo } : {}), ...agentOf(run) };
    return;
  } catch (error) {
    if (!(error instanceof ServiceError) || !/KeelStatus|search attribute/i.test(error.message)) throw error;
    query = base;
  }
  for await (const run of listExecutions(client, { query, pageSize: 1000 }))
    yield { runId: run.workflowId, ...(run.memo ? { memo: run.memo } : {}), ...agentOf(run) };
}

/** A listed run's agent: its KeelAgent search attribute, or the memo keel's client starts runs with. */
function agentOf(run: { memo?: Record<string, unknown>; searchAttributes?: Record<string, unknown> }): { agent?: string } {
  const indexed = run.searchAttributes?.[KEEL_AGENT.name];
  if (Array.isArray(indexed) && typeof indexed[0] === 'string') return { agent: indexed[0] };
  return typeof run.memo?.agent === 'string' ? { agent: run.memo.agent } : {};
}

/**
 * The pending holds of one open run: from its memo (no worker needed), or for a run from before
 * the memo, its status query (bounded; none when no worker answers).
 */
export async function holdsOf(client: Client, runId: string, memo?: Record<string, unknown>): Promise<MemoHold[]> {
  const recorded = z.array(MemoHoldSchema).safeParse((memo ?? (await client.workflow.getHandle(runId).describe()).memo)?.[HOLDS_MEMO_KEY]);
  if (recorded.success) return recorded.data;
  const status = await client.withDeadline(Date.now() + QUERY_MS, () => client.workflow.getHandle(runId).query(statusQuery)).catch(() => undefined);
  return (status?.interrupts ?? []).map(({ id, kind, question, toolName, ref, path, message, decision, since }) => ({
    id,
    kind,
    question: question ?? message,
    toolName,
    ref,
    path,
    since,
    approvable: takesApproval(decision),
  }));
}

/** Every pending hold in the client's namespace, once each, oldest first (holds from before `since` last), with the commands that decide it. */
export async function listHolds(client: Client): Promise<HoldView[]> {
  const found: Array<{ runId: string; agent?: string; holds: MemoHold[] }> = [];
  for await (const run of waitingRuns(client)) {
    const holds = await holdsOf(client, run.runId, run.memo ?? {});
    if (holds.length) found.push({ runId: run.runId, ...(run.agent ? { agent: run.agent } : {}), holds });
  }
  const shownAbove = new Set(found.flatMap((run) => run.holds.flatMap(covered)).map(([runId, id]) => `${runId}\u0000${id}`));
  const holds = found.flatMap((run) =>
    run.holds
      .filter((hold) => !shownAbove.has(`${run.runId}\u0000${hold.id}`))
      .map((hold): HoldView => ({
        runId: run.runId,
        ...(run.agent ? { agent: run.agent } : {}),
        ...hold,
        ...decideCommands(run.runId, hold.id, hold.approvable),
      })),
  );
  // Stable: holds without a time keep the order Temporal listed them in, after those with one.
  return holds.sort((a, b) => (a.since ?? '\uffff').localeCompare(b.since ?? '\uffff'));
}
