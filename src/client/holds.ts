/**
 * Every pending hold of a namespace, for `keel holds` and the UI's inbox: the runs Temporal lists
 * as waiting (KeelStatus, when the namespace has keel's search attributes; else every open run),
 * each hold read from the run's memo (so no worker is needed) or, for a run from before the memo,
 * its status query. A hold that a parent run shows (a sub-agent's, with its path) is listed
 * once, at the topmost run that shows it, which is where a decision for it is sent. What a
 * person deciding needs (the question, the call's input, what the user asked, what the agent was
 * doing, its agent) comes from that one listing: the memo carries it. Node side.
 */
import { listExecutions, type ListScope } from '../node/list-executions';
import { principalField, principalOfMemo, type Principal } from '../core/principal';
import { ServiceError, type Client } from '@temporalio/client';
import { HOLDS_MEMO_KEY, MemoHoldSchema, memoHolds, type MemoHold } from '../core/run';
import { decideCommands } from './decide-commands';
import { runLabel } from '../core/run-label';
import { z } from 'zod';
import { KEEL_AGENT, KEEL_STATUS } from '../core/search-attributes';
import { GENERATE_WORKFLOW, statusQuery } from '../core/protocol';

/** One pending hold, what a person deciding it is shown, and the commands that decide it. */
export interface HoldView extends MemoHold {
  /** The run a decision goes to (the topmost that shows the hold). The call is held there, or in the last run of `path`. */
  runId: string;
  /** A short name for the run holding the call: a sub-agent's keys from `runId` (`clerk-1`), else `runId` with its UUID cut (`run-5a090c1c`). */
  label: string;
  /** The agent of the run holding the call (a sub-agent's own), when known. */
  agent?: string;
  /** What the user asked: the prompt `runId` was started with, when keel's client started it (else, for its own hold, what the run was asked). */
  prompt?: string;
  /** Whom `runId` belongs to (docs/tenants.md), when it was started for someone. */
  principal?: Principal;
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

/** A listed run that may hold something: its id, agent (when Temporal says) and memo. */
interface WaitingRun {
  runId: string;
  agent?: string;
  memo?: Record<string, unknown>;
}

/** Lists the open keel runs that may hold something, with their memo. */
async function* waitingRuns(client: Client, scope: ListScope | undefined): AsyncGenerator<WaitingRun> {
  const base = `WorkflowType='${GENERATE_WORKFLOW}' AND ExecutionStatus='Running'`;
  let query = `${base} AND ${KEEL_STATUS.name}='waiting'`;
  try {
    // Without keel's search attributes the query is refused: then every open run is looked at.
    const first = listExecutions(client, { query, pageSize: 1000, scope });
    for await (const run of first) yield { runId: run.workflowId, ...(run.memo ? { memo: run.memo } : {}), ...agentOf(run) };
    return;
  } catch (error) {
    if (!(error instanceof ServiceError) || !/KeelStatus|search attribute/i.test(error.message)) throw error;
    query = base;
  }
  for await (const run of listExecutions(client, { query, pageSize: 1000, scope }))
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
  return memoHolds(status?.interrupts ?? []);
}

/** The hold as a person deciding it sees it, listed at `run`, with the commands that decide it. */
function holdView(run: WaitingRun, hold: MemoHold): HoldView {
  const own = !hold.path?.length;
  const agent = hold.agent ?? (own ? run.agent : undefined);
  const prompt = typeof run.memo?.prompt === 'string' ? run.memo.prompt : own ? hold.asked : undefined;
  return {
    runId: run.runId,
    label: own ? runLabel(run.runId) : hold.id.split('/').slice(0, -1).join('/'),
    ...hold,
    ...(agent !== undefined ? { agent } : {}),
    ...(prompt !== undefined ? { prompt } : {}),
    ...principalField(principalOfMemo(run.memo)),
    ...decideCommands(run.runId, hold.id, hold.approvable),
  };
}

/** Every pending hold in the client's namespace, once each, oldest first (holds from before `since` last), with the commands that decide it. */
export async function listHolds(client: Client, scope?: ListScope): Promise<HoldView[]> {
  const found: Array<{ run: WaitingRun; holds: MemoHold[] }> = [];
  for await (const run of waitingRuns(client, scope)) {
    const holds = await holdsOf(client, run.runId, run.memo ?? {});
    if (holds.length) found.push({ run, holds });
  }
  const shownAbove = new Set(found.flatMap(({ holds }) => holds.flatMap(covered)).map(([runId, id]) => `${runId}\u0000${id}`));
  const holds = found.flatMap(({ run, holds: shown }) =>
    shown.filter((hold) => !shownAbove.has(`${run.runId}\u0000${hold.id}`)).map((hold) => holdView(run, hold)),
  );
  // Stable: holds without a time keep the order Temporal listed them in, after those with one.
  return holds.sort((a, b) => (a.since ?? '\uffff').localeCompare(b.since ?? '\uffff'));
}
