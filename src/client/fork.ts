/**
 * Forking a run (docs/fork.md): a new run whose conversation is the source's up to a turn,
 * with the edits asked for, checked by a worker before anything starts. The conversation goes
 * in 32-message chunks, as a run that continues as new carries it, so a content-addressed store
 * keeps each chunk the source's chain stored once. Node side.
 */
import { DEFAULT_FAIRNESS, priorityOf, type FairnessConfig } from '../core/fairness';
import { QueryNotRegisteredError, TimeoutFailure, WorkflowFailedError, WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { KeelError } from '../core/errors';
import {
  FORK_CHECK_WORKFLOW,
  FORK_MEMO_KEY,
  carriedUsage,
  ForkOriginSchema,
  conversationTurns,
  forkCut,
  applyForkEdits,
  type ForkCheckInput,
  type ForkEdits,
  type ForkOrigin,
  type ForkPoint,
} from '../core/fork';
import { messageChunks, promptExcerpt, type Message } from '../core/messages';
import { forkPointQuery } from '../core/protocol';
import { decodePayload } from './decode-payload';
import { RunResultSchema, type RunInputOptions } from '../core/run';
import type { Usage } from '../core/usage';
import type { RunVersioning } from '../core/versioning';
import { runErrorOf } from '../node/run-errors';

import { startGenerate } from './start-run';
import { principalMemo, principalOfMemo, type Principal } from '../core/principal';

/** Options of `RunHandle.fork`. */
export interface ForkOptions extends ForkEdits {
  /** The turn of the source the fork goes on after (0: before its first model call). */
  at: number;
  /** The agent the fork runs (default: the source's). */
  agent?: string;
  /** The model the fork calls, over its agent's. */
  model?: string;
  /** The fork's run id (default `fork-<uuid>`). */
  runId?: string;
  /** The task queue the fork runs on (default: the source's). */
  taskQueue?: string;
}

/** What a fork started. */
export interface ForkStarted {
  runId: string;
  source: string;
  turn: number;
  /** What the conversation had spent up to the fork point, as the source counted it (the fork's own usage does not include it). */
  usage: Usage;
}

/**
 * A fork at the end of a completed run, read from its result and memo with no worker: a query
 * of a finished run replays its history, which for a long conversation takes seconds. Undefined
 * (ask the run) for another turn, or a run whose memo does not name its agent (a sub-agent's).
 */
async function finishedRunPoint(
  handle: WorkflowHandle,
  memo: Record<string, unknown> | undefined,
  turn: number,
): Promise<{ point: ForkPoint; kept: Message[] } | undefined> {
  const agent = memo?.agent;
  if (typeof agent !== 'string') return undefined;
  const result = RunResultSchema.parse(await handle.result());
  const turns = conversationTurns(result.messages);
  if (turn !== turns) return undefined;
  const origin = ForkOriginSchema.safeParse(memo?.[FORK_MEMO_KEY]);
  const fork = origin.success ? origin.data : undefined;
  const usage = carriedUsage(fork, result.usage);
  return { point: { agent, turns, usage, ...(fork ? { fork } : {}) }, kept: forkCut(result.messages, turn, handle.workflowId) };
}

/** The source's answer to the fork point query with the conversation a fork at `turn` keeps (one query: a finished run is replayed to answer it), and its task queue. */
async function readSource(
  temporal: Client,
  source: string,
  turn: number,
): Promise<{ point: ForkPoint; kept: Message[]; taskQueue: string; inherited: Partial<RunInputOptions>; principal: Principal }> {
  const handle = temporal.workflow.getHandle(source);
  try {
    const { taskQueue, status, memo, runId } = await handle.describe();
    const inherited = await runOptionsOf(temporal, source, runId);
    // A fork belongs to whom its source belongs (docs/tenants.md).
    const principal = principalOfMemo(memo);
    const ended = status.name === 'COMPLETED' ? await finishedRunPoint(handle, memo, turn) : undefined;
    if (ended) return { ...ended, taskQueue, inherited, principal };
    const point = await handle.query(forkPointQuery, turn, true);
    if (point.refusal !== undefined) throw new KeelError('INVALID_ARGUMENT', point.refusal);
    return { point, kept: point.conversation ?? [], taskQueue, inherited, principal };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) throw new KeelError('NOT_FOUND', `no run "${source}" exists`);
    if (KeelError.isInstance(error)) throw error;
    if (error instanceof QueryNotRegisteredError && error.message.includes('forkPoint'))
      throw new KeelError(
        'FAILED_PRECONDITION',
        `run ${source} does not answer the fork point query: it is not a generate run (a session: fork one of its runs), or its task queue's workers predate forks`,
      );
    throw runErrorOf(error);
  }
}

/** What the source's run was started with that a fork keeps (its own middleware, output schema, model, limits and hold policy), read from its start event. */
async function runOptionsOf(temporal: Client, workflowId: string, runId: string): Promise<Partial<RunInputOptions>> {
  const { history } = await temporal.workflowService.getWorkflowExecutionHistory({
    namespace: temporal.options.namespace,
    execution: { workflowId, runId },
    maximumPageSize: 1,
  });
  const input = await decodePayload<Partial<RunInputOptions>>(temporal, history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]);
  const kept = (['use', 'output', 'model', 'maxTurns', 'interruptMode', 'interruptTimeout', 'onInterruptTimeout', 'continueAsNewAt'] as const).filter(
    (key) => input?.[key] !== undefined,
  );
  return Object.fromEntries(kept.map((key) => [key, input![key]]));
}

/** What the conversation had spent by the end of `turn`: the run's answer, else the answer of the run it was forked from (a turn before its own). */
async function usageAt(temporal: Client, point: ForkPoint, turn: number): Promise<Usage> {
  let current = point;
  for (let hops = 0; current.usage === undefined && current.fork && turn < current.fork.turn && hops < 100; hops++) {
    const next = await temporal.workflow
      .getHandle(current.fork.source)
      .query(forkPointQuery, turn)
      .catch(() => undefined);
    // The source is gone (past its retention): unknown.
    if (!next) return {};
    current = next;
  }
  return current.usage ?? {};
}

/** How long the fork check may take (a worker that lacks the agent refuses it within seconds). */
const CHECK_SECONDS = 30;

/** Runs the fork check on a worker of the task queue; its refusal is a KeelError saying what was wrong. */
async function check(temporal: Client, taskQueue: string, input: ForkCheckInput): Promise<void> {
  try {
    await temporal.workflow.execute(FORK_CHECK_WORKFLOW, {
      taskQueue,
      workflowId: `keel-fork-check-${randomUUID()}`,
      args: [input],
      workflowExecutionTimeout: `${CHECK_SECONDS} seconds`,
    });
  } catch (error) {
    if (error instanceof WorkflowFailedError && error.cause instanceof TimeoutFailure) {
      throw new KeelError(
        'UNAVAILABLE',
        `no worker of task queue "${taskQueue}" checked the fork within ${CHECK_SECONDS} s: start one (of this keel version or later: older workers lack the check); nothing was started`,
      );
    }
    if (error instanceof WorkflowFailedError) throw runErrorOf(error);
    throw new KeelError('UNAVAILABLE', `could not check the fork on task queue "${taskQueue}": ${(error as Error).message}`);
  }
}

/** Forks run `source` at a turn: checks it all, then starts the fork; bad input starts nothing. */
export async function forkRun(
  temporal: Client,
  source: string,
  { at, message, toolResults, agent, model, runId = `fork-${randomUUID()}`, taskQueue }: ForkOptions,
  { versioning = {}, fairness = DEFAULT_FAIRNESS }: { versioning?: Readonly<Record<string, RunVersioning>>; fairness?: FairnessConfig } = {},
): Promise<ForkStarted> {
  if (!Number.isInteger(at) || at < 0) throw new KeelError('INVALID_ARGUMENT', `the turn to fork at is a whole number from 0 (got ${at})`);
  const read = await readSource(temporal, source, at);
  const edited = applyForkEdits(
    read.kept,
    { ...(message !== undefined ? { message } : {}), ...(toolResults ? { toolResults } : {}) },
    { runId: source, turn: at },
  );
  const forkAgent = agent ?? read.point.agent;
  const queue = taskQueue ?? read.taskQueue;
  const forkModel = model ?? read.inherited.model;
  await check(temporal, queue, { agent: forkAgent, ...(forkModel !== undefined ? { model: forkModel } : {}), toolResults: edited.changed });
  const usage = await usageAt(temporal, read.point, at);
  const fork: ForkOrigin = { source, turn: at, usage };
  const input: RunInputOptions = { ...read.inherited, agent: forkAgent, messages: [], fork, ...(model !== undefined ? { model } : {}) };
  await startGenerate(temporal, {
    runId,
    agent: forkAgent,
    taskQueue: queue,
    args: [input, ...messageChunks(edited.messages)],
    excerpt: promptExcerpt(edited.messages),
    versioning: versioning[forkAgent],
    memo: { [FORK_MEMO_KEY]: fork, ...principalMemo(read.principal) },
    priority: priorityOf(fairness, 'fork', read.principal.tenant),
  });
  return { runId, source, turn: at, usage };
}
