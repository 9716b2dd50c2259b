/**
 * What a run reports about itself: the `status`, `messages` and (internal) `modelRequest`
 * query handlers over the run's state, and how the state settles when the run completes,
 * fails, is stopped or is cancelled. Runs in the workflow: deterministic, no I/O.
 */
import {
  ApplicationFailure,
  ContinueAsNew,
  isCancellation,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { KEEL_AGENT, KEEL_FORK_OF, KEEL_OWNER, KEEL_STATUS, KEEL_TENANT } from '../core/search-attributes';
import { principalOfMemo } from '../core/principal';
import { carriedUsage, conversationTurns, forkCut, type ForkPoint } from '../core/fork';
import { KeelError, RunStoppedError, ToolFailure, fromApplicationFailure, toApplicationFailure, toKeelError } from '../core/errors';
import { ToolInterrupt } from '../core/interrupts';
import { artifactText } from '../core/artifacts';
import { cutText, messageText, promptExcerpt } from '../core/messages';
import { HOLDS_MEMO_KEY, KEPT_REFUSED_SIGNALS, memoHolds, type Hold, type RunResult, type RunStatus } from '../core/run';
import { MODEL_REQUEST_PAGE_CHARS, forkPointQuery, messagesQuery, modelRequestQuery, statusQuery } from '../core/protocol';
import type { RunState } from './run-state';
import { fittingStop } from './payload-fit';

/** Answers the run's queries from its state. */
export function answerQueries(run: RunState, features: () => Partial<RunStatus>): void {
  setHandler(
    statusQuery,
    () => ({
      ...run.status,
      ...features(),
      messageCount: run.messages.length,
      artifacts: run.artifacts.map((artifact) => ({
        name: artifact.name,
        chars: [...artifactText(artifact)].length,
        ...(artifact.metadata ? { metadata: artifact.metadata } : {}),
      })),
    }),
    { description: 'The run: state (running, waiting, completed, failed, cancelled), turn, usage, pending holds, tasks, artifacts.' },
  );
  setHandler(messagesQuery, (from: number) => run.messages.slice(Math.max(0, from)), { description: "The run's conversation from index `from` on." });
  setHandler(forkPointQuery, (turn: number, conversation?: boolean) => forkPoint(run, turn, conversation === true), {
    description: "The run's turns, and what its conversation had spent by the end of turn `turn`; with `conversation`, what a fork there keeps (docs/fork.md).",
  });
  // Internal: not part of the protocol (docs/protocol.md); the model activity reads its request with it.
  const modelRequestPage = (key: string, page = 0) => {
    const request = run.modelRequests[key];
    if (request === undefined) throw new Error(`no model request "${key}" is pending in run ${run.runId}`);
    const pages = request.ids.length;
    if (!Number.isInteger(page) || page < 0 || page >= pages) throw new Error(`model request "${key}" has ${pages} pages; there is no page ${page}`);
    const text = request.text.slice(page * MODEL_REQUEST_PAGE_CHARS, (page + 1) * MODEL_REQUEST_PAGE_CHARS);
    // The first page also lists every page's id, so the activity fetches only pages it has not seen.
    return { pages, text, ...(page === 0 ? { ids: request.ids } : {}) };
  };
  setHandler(modelRequestQuery, modelRequestPage, {
    description: 'Internal to keel (its model activity reads a request by reference); not part of the protocol.',
  });
}

/** What a fork of the run at `turn` carries (its usage there, when this run saw that turn end; its source answers for turns before a fork's own). */
function forkPoint(run: RunState, turn: number, withConversation: boolean): ForkPoint {
  const fork = run.status.fork;
  // A run that started (or continued) before runs kept their turns' usage cannot tell it.
  const own = run.turns === undefined ? -1 : turn - run.turns.base;
  const turnUsage = run.turns?.usage ?? [];
  const spent =
    own < 0 || !Number.isInteger(own) ? undefined : own < turnUsage.length ? turnUsage[own] : own === turnUsage.length ? run.status.usage : undefined;
  return {
    agent: run.status.agent,
    turns: conversationTurns(run.messages),
    ...(spent ? { usage: carriedUsage(fork, spent) } : {}),
    ...(fork ? { fork } : {}),
    ...(withConversation ? cutAt(run, turn) : {}),
  };
}

/** The conversation a fork at `turn` keeps, or why it is refused: answered, so the client need not read an error's text. */
function cutAt(run: RunState, turn: number): Pick<ForkPoint, 'conversation' | 'refusal'> {
  try {
    return { conversation: forkCut(run.messages, turn, run.runId) };
  } catch (error) {
    if (KeelError.isInstance(error)) return { refusal: error.message };
    throw error;
  }
}

/** Records a signal the run refused and why (the latest KEPT_REFUSED_SIGNALS), for `status` to show. */
export function recordRefusedSignal(run: RunState, signal: string, reason: string): void {
  run.status.refusedSignals = [...(run.status.refusedSignals ?? []), { signal, reason }].slice(-KEPT_REFUSED_SIGNALS);
}

/** Records the pending holds: a run with any is `waiting`. */
export function showHolds(run: RunState, pending: Hold[]): void {
  run.status.interrupts = pending;
  if (run.status.state === 'running' || run.status.state === 'waiting') run.status.state = pending.length ? 'waiting' : 'running';
  indexState(run);
  memoizeHolds(run, pending);
  // The Temporal Web UI shows it as the run's current details: what it waits for, and how to decide it there.
  setCurrentDetails(waitDetails(pending));
}

/** How much of the model's latest text a hold records. */
const HOLD_MODEL_TEXT_CHARS = 200;

/**
 * What a hold records of the run raising it, for whoever decides: the run's agent and turn,
 * what it was asked (its latest user message) and the model's latest text before the call.
 * Carried with the hold to the runs above (a sub-agent's hold keeps its own agent) and into
 * the memo; no command of the run changes with them.
 */
export function holdContext(run: RunState): Pick<Hold, 'agent' | 'turn' | 'asked' | 'modelText'> {
  const asked = promptExcerpt(run.messages);
  const said = [...run.messages].reverse().find((message) => message.role === 'model' && messageText(message).trim() !== '');
  const modelText = said ? cutText(messageText(said).replace(/\s+/g, ' ').trim(), HOLD_MODEL_TEXT_CHARS) : '';
  return { agent: run.status.agent, turn: run.status.turn, ...(asked ? { asked } : {}), ...(modelText ? { modelText } : {}) };
}

/** How many holds the current details describe one by one. */
const DETAILED_HOLDS = 10;

/**
 * What a waiting run waits for, as the Temporal Web UI shows it (Markdown): each hold, its
 * question, and the Update that decides it from there. Empty when nothing waits.
 */
export function waitDetails(pending: readonly Hold[]): string {
  if (pending.length === 0) return '';
  const lines = [`**Waiting for a decision** on ${pending.length === 1 ? '1 hold' : `${pending.length} holds`}:`, ''];
  for (const hold of pending.slice(0, DETAILED_HOLDS)) {
    const question = hold.question ?? hold.message ?? '';
    lines.push(`- \`${hold.id}\` (${hold.kind})${hold.toolName ? ` on \`${hold.toolName}\`` : ''}${question ? `: ${question}` : ''}`);
  }
  if (pending.length > DETAILED_HOLDS) lines.push(`- and ${pending.length - DETAILED_HOLDS} more (keel holds lists them all)`);
  const [first] = pending;
  lines.push(
    '',
    `Decide with **Send an Update** \`resume\`, e.g. \`{"interruptId":"${first!.id}","approved":true,"reason":"..."}\` (a hold whose decision schema in \`status\` asks for something else takes \`{"interruptId":"${first!.id}","restart":{...}}\`), or \`keel approve <runId> ${first!.id}\`.`,
  );
  return lines.join('\n');
}

/**
 * Keeps the pending holds in the run's memo, which Temporal answers without a worker: `keel
 * holds` lists them across the namespace and `keel status` shows them while no worker runs.
 * Upserted only when the list changed.
 */
function memoizeHolds(run: RunState, pending: readonly Hold[]): void {
  const holds = memoHolds(pending);
  const json = JSON.stringify(holds);
  if (json === (run.published.holds ?? '[]')) return;
  run.published.holds = json;
  upsertMemo({ [HOLDS_MEMO_KEY]: holds });
}

/**
 * Starts keeping the run's search attributes (when the namespace has them): the agent, and
 * the state from now on.
 */
export function startIndexing(run: RunState, { forks, principals }: { forks: boolean; principals: boolean }): void {
  run.published.state = run.status.state;
  const { tenant, owner } = principals ? principalOfMemo(workflowInfo().memo) : {};
  upsertSearchAttributes([
    { key: KEEL_AGENT, value: run.status.agent },
    { key: KEEL_STATUS, value: run.status.state },
    ...(forks && run.status.fork ? [{ key: KEEL_FORK_OF, value: run.status.fork.source }] : []),
    ...(tenant ? [{ key: KEEL_TENANT, value: tenant }] : []),
    ...(owner ? [{ key: KEEL_OWNER, value: owner }] : []),
  ]);
}

/** Upserts `KeelStatus` when the run's state changed since it was last indexed. */
function indexState(run: RunState): void {
  if (run.published.state === undefined || run.published.state === run.status.state) return;
  run.published.state = run.status.state;
  upsertSearchAttributes([{ key: KEEL_STATUS, value: run.status.state }]);
}

/** Records a completed run. */
export function settleCompleted(run: RunState, result: RunResult): void {
  run.messages = result.messages;
  run.status.state = 'completed';
  run.status.finishReason = result.finishReason;
  run.status.text = result.text;
  if (result.output !== undefined) run.status.output = result.output;
  indexState(run);
}

/** Options of `settleFailure`. */
export interface SettleFailureOptions {
  /** The most one payload may hold when External Storage is off (a stop's partial result is made to fit). */
  inlinePayloadLimit?: number;
}

/**
 * Records how a run ended without a result and returns what the workflow throws: a
 * cancellation as is; a stop (RunStoppedError) as ABORTED-like failure carrying the partial
 * result, with finish reason `aborted`; anything else as a failure with its status.
 */
export function settleFailure(run: RunState, error: unknown, { inlinePayloadLimit }: SettleFailureOptions = {}): unknown {
  // Moving to the next run of the chain is not a failure: the error goes through untouched.
  if (error instanceof ContinueAsNew) return error;
  const thrown = failureOf(run, error, inlinePayloadLimit);
  indexState(run);
  return thrown;
}

/** What a tool call that fails its run is told, after its error: no middleware of the run answered it to the model. */
export const SOFT_TOOL_ERRORS_HINT =
  'the softToolErrors middleware would answer a failing tool call to the model instead of failing the run (docs/middleware/soft-tool-errors.md)';

/**
 * A tool's own failure (it threw, its input failed its schema, no such tool) that fails a run a
 * client started says how the model could have seen it instead; a sub-agent's failure goes to its
 * parent's model, which has no use for the hint.
 */
function withHint(failure: KeelError): KeelError {
  if (!ToolFailure.isInstance(failure) || workflowInfo().parent) return failure;
  return new KeelError(failure.status, `${failure.message}; ${SOFT_TOOL_ERRORS_HINT}`, failure.details, failure.classified);
}

function failureOf(run: RunState, error: unknown, inlinePayloadLimit: number | undefined): unknown {
  const { status } = run;
  status.interrupts = [];
  const lastModelText = messageText([...run.messages].reverse().find((message) => message.role === 'model'));
  if (isCancellation(error)) {
    status.state = 'cancelled';
    status.finishReason = 'aborted';
    status.text = lastModelText;
    return error;
  }
  if (error instanceof ApplicationFailure) {
    status.state = 'failed';
    status.error = { status: fromApplicationFailure(error).status, message: error.message };
    return error;
  }
  if (ToolInterrupt.isInstance(error)) {
    error = new KeelError('FAILED_PRECONDITION', `middleware "${error.raisedBy}" held a call outside wrapTool: interrupt() holds tool calls only`);
  }
  const failure = withHint(toKeelError(error));
  status.error = failure.toJSON();
  if (!RunStoppedError.isInstance(failure)) {
    status.state = 'failed';
    return toApplicationFailure(failure);
  }
  // Stopped rather than failed: keep the partial response.
  status.state = failure.cancelled ? 'cancelled' : 'failed';
  status.finishReason = 'aborted';
  status.text = lastModelText;
  const partial = { finishReason: 'aborted', text: lastModelText, messages: run.messages, usage: status.usage, turns: status.turn, artifacts: run.artifacts };
  // Without External Storage the failure is one inline payload: a partial over it keeps less, and says so.
  const stop = fittingStop({ message: failure.message, details: failure.details, partial, limit: inlinePayloadLimit });
  if (stop.message !== failure.message) status.error = { status: failure.status, message: stop.message };
  return toApplicationFailure(new KeelError(failure.status, stop.message, stop.details, failure.classified));
}
