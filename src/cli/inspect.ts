/**
 * The commands that read runs: `keel status`, `keel list`, `keel tasks`, `keel holds`. Node side.
 */
import { votesText } from '../core/approvers';
import { principalField, principalOfMemo } from '../core/principal';
import type { KeelConfig } from '../config/schema';
import { FORK_MEMO_KEY, ForkOriginSchema, type ForkOrigin } from '../core/fork';
import { KeelError } from '../core/errors';
import type { HoldView } from '../client/holds';
import { HOLDS_MEMO_KEY, MemoHoldSchema, RunLifecycleSchema, type MemoHold, type RunResult, type RunStatus } from '../core/run';
import { KEEL_STATUS } from '../core/search-attributes';
import { z } from 'zod';
import { EXIT, UsageError, later, numberOption, print, refuse, type CliOptions } from './common';
import { runErrorOf, tryStatus, warnWithoutWorkers, withClient, withClientRefusing } from './client';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { keelSpendLedger, SpendReport, WindowSpend } from '../features/catalog';
import { usageLine } from './run';

/**
 * What an open run last recorded in Temporal itself, for when no worker answers its query: its
 * state (the KeelStatus search attribute) and pending holds (its memo), where it keeps them.
 */
function recordedStatus(description: { memo?: Record<string, unknown>; searchAttributes: Record<string, unknown> }): {
  state: RunStatus['state'];
  interrupts: MemoHold[];
} {
  const holds = z.array(MemoHoldSchema).safeParse(description.memo?.[HOLDS_MEMO_KEY]);
  const indexed = description.searchAttributes[KEEL_STATUS.name];
  const state = RunLifecycleSchema.safeParse(Array.isArray(indexed) ? indexed[0] : undefined);
  const interrupts = holds.success ? holds.data : [];
  return { state: state.success ? state.data : interrupts.length ? 'waiting' : 'running', interrupts };
}

/** `keel list`: the namespace's runs, newest first, by agent and state. */
export async function commandList(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  if (positionals.length)
    throw new UsageError(`keel list takes no arguments (filter with --agent, --status, --tenant, --owner, --limit); got ${positionals.join(' ')}`);
  const state = options.status === undefined ? undefined : RunLifecycleSchema.safeParse(options.status);
  if (state && !state.success)
    throw new UsageError(`keel list --status: "${options.status}" is not a run state; one of ${RunLifecycleSchema.options.join(', ')}`);
  const limit = numberOption(options, 'limit') ?? 50;
  return withClientRefusing(config, options, 'list', async (client) => {
    const runs = await client.list({
      ...(options.agent !== undefined ? { agent: options.agent } : {}),
      ...(state?.success ? { state: state.data } : {}),
      ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
      ...(options.owner !== undefined ? { owner: options.owner } : {}),
      limit,
    });
    const whose = (run: (typeof runs)[number]) => (run.tenant || run.owner ? `  ${run.owner ?? ''}${run.tenant ? `@${run.tenant}` : ''}` : '');
    const line = (run: (typeof runs)[number]) =>
      `${run.runId}  ${run.state}${run.holds ? ` (${run.holds} hold${run.holds > 1 ? 's' : ''})` : ''}  ${run.agent ?? '?'}${whose(run)}  ${run.startedAt}${run.prompt ? `  ${run.prompt}` : ''}`;
    print(options.json, { runs }, runs.map(line).join('\n') || '(no runs)');
    return EXIT.ok;
  });
}

/** The fork a run is, as its status says or its memo recorded. */
function forkOf(status: RunStatus | undefined, memo: Record<string, unknown> | undefined): ForkOrigin | undefined {
  if (status?.fork) return status.fork;
  const recorded = ForkOriginSchema.safeParse(memo?.[FORK_MEMO_KEY]);
  return recorded.success ? recorded.data : undefined;
}

export async function commandStatus(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  const [runId] = positionals;
  if (!runId) throw new UsageError('keel status needs a run id');
  return withClient(config, async (client) => {
    const handle = client.getHandle(runId);
    let description;
    try {
      description = await handle.describe();
    } catch (error) {
      return refuse(options, 'status', runErrorOf(error));
    }
    const temporalStatus = description.status.name;
    // No worker: the run cannot answer its status query; Temporal's description still can.
    const idle = temporalStatus === 'RUNNING' && (await warnWithoutWorkers(client, config, 'status'));
    const status = idle ? undefined : await tryStatus(client, handle);
    let result: RunResult | undefined;
    let error: KeelError | undefined;
    if (temporalStatus === 'COMPLETED') result = await handle.result();
    else if (temporalStatus !== 'RUNNING') error = await handle.result().then(() => undefined, runErrorOf);
    const byTemporal: Record<string, RunStatus['state']> = {
      RUNNING: 'running',
      COMPLETED: 'completed',
      CANCELLED: 'cancelled',
      TERMINATED: 'terminated',
      TIMED_OUT: 'timed_out',
    };
    // An open run no worker answered for: what it last recorded in Temporal (its KeelStatus and the holds in its memo), said as such.
    const recorded = temporalStatus === 'RUNNING' && !status ? recordedStatus(description) : undefined;
    if (recorded) {
      process.stderr.write(
        `keel status: no worker answered the run's status query${idle ? '' : ' within 5 s'}; showing what the run last recorded in Temporal (its state and pending holds; turn and usage need a worker)\n`,
      );
    }
    const state = status?.state ?? recorded?.state ?? byTemporal[temporalStatus ?? ''] ?? 'failed';
    print(options.json, {
      runId,
      status: state,
      ...(recorded ? { workerAnswered: false } : {}),
      turn: status?.turn ?? result?.turns ?? 0,
      ...((result?.finishReason ?? status?.finishReason) ? { finishReason: result?.finishReason ?? status?.finishReason } : {}),
      ...((result?.text ?? status?.text) ? { text: result?.text ?? status?.text } : {}),
      ...((result?.output ?? status?.output) !== undefined ? { output: result?.output ?? status?.output } : {}),
      usage: result?.usage ?? status?.usage ?? {},
      interrupts: status?.interrupts ?? recorded?.interrupts ?? [],
      tasks: status?.tasks ?? [],
      ...(error ? { error: error.toJSON() } : status?.error ? { error: status.error } : {}),
      ...(status?.refusedSignals?.length ? { refusedSignals: status.refusedSignals } : {}),
      // Who decided which hold, when, how and why: an audit answered by `keel status` alone.
      ...((result?.decisions ?? status?.decisions)?.length ? { decisions: result?.decisions ?? status?.decisions } : {}),
      // The steering messages the run took (or has pending), in order.
      ...(status?.steering?.length ? { steering: status.steering } : {}),
      // Whom the run belongs to (docs/tenants.md), from its memo.
      ...principalField(principalOfMemo(description.memo)),
      // A fork's lineage: its source and turn, from the run or (no worker needed) its memo.
      ...(forkOf(status, description.memo) ? { fork: forkOf(status, description.memo) } : {}),
    });
    return EXIT.ok;
  });
}

/** `keel cost --tenant <t>` (or `--owner <subject>`): what the spend ledger of a tenant or owner counted, window by window, newest first. */
export async function commandCost(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  if (positionals.length)
    throw new UsageError(`keel cost takes no arguments (got "${positionals[0]}"): name whose spend with --tenant <t> or --owner <subject>`);
  if ((options.tenant === undefined) === (options.owner === undefined)) throw new UsageError('keel cost needs one of --tenant <t> or --owner <subject>');
  const scope = options.tenant !== undefined ? 'tenant' : 'owner';
  const name = (options.tenant ?? options.owner)!;
  // Loaded for this command only: the catalog holds every feature's workflow half.
  const { spendLedgerId, spendQuery } = later<typeof import('../features/catalog')>('../features/catalog');
  return withClientRefusing(config, options, 'cost', async (client) => {
    const handle = client.temporal.workflow.getHandle<typeof keelSpendLedger>(spendLedgerId(scope, name));
    let report: SpendReport;
    try {
      // A ledger answers while open (a worker answers the query); a closed one's result is its last report.
      const { status } = await handle.describe();
      report = status.name === 'RUNNING' ? await client.temporal.withDeadline(Date.now() + 10_000, () => handle.query(spendQuery)) : await handle.result();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) report = { scope, name, windows: [], charges: 0, repeats: 0 };
      else throw new KeelError('UNAVAILABLE', `the spend ledger of ${scope} ${name} did not answer (is a worker running?): ${(error as Error).message}`);
    }
    const line = (window: WindowSpend) =>
      `${new Date(window.start).toISOString()}  ${durationText(window.size)}  ${usageLine(window.usage) || 'nothing spent'}`;
    print(
      options.json,
      report,
      report.windows.length
        ? report.windows.map(line).join('\n')
        : `no spend counted for ${scope} ${name} (only runs with a Budget of scope ${scope} are counted)`,
    );
    return EXIT.ok;
  });
}

/** A window's size for a person: days, hours, minutes or seconds. */
function durationText(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
  ] as const)
    if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms / 1000}s`;
}

export async function commandTasks(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  const [runId] = positionals;
  if (!runId) throw new UsageError('keel tasks needs a run id');
  return withClientRefusing(config, options, 'tasks', async (client) => {
    const tasks = await client.getHandle(runId).tasks();
    const describe = (task: (typeof tasks)[number]) =>
      `${task.taskId}  ${task.status}${task.result ? `  ${task.result}` : ''}${task.error ? `  ${task.error.status}: ${task.error.message}` : ''}${(task.interrupts ?? []).map((hold) => `\n  ${hold.id}  ${hold.kind}${hold.toolName ? ` ${hold.toolName}` : ''}${[hold.approve, hold.deny, hold.decide].map((line) => (line ? `\n    ${line}` : '')).join('')}`).join('')}`;
    print(options.json, { tasks }, tasks.map(describe).join('\n') || '(no background tasks)');
    return EXIT.ok;
  });
}

/**
 * A hold as `keel holds` prints it: its question, the held call, what the user asked, the run
 * holding it (its agent and turn; what a sub-agent was asked), the model's latest text before
 * the call, and the commands that decide it.
 */
function describeHold(hold: HoldView): string[] {
  const own = !hold.path?.length;
  const call = hold.toolName && !hold.toolName.startsWith('(') ? `${hold.toolName}(${hold.inputText ?? ''})` : hold.toolName;
  const about = [hold.agent ? `agent ${hold.agent}` : '', hold.turn !== undefined ? `turn ${hold.turn}` : ''].filter(Boolean).join(', ');
  const holder = `${hold.label}${about ? ` (${about})` : ''}`;
  return [
    `${hold.runId}  ${hold.id}  ${hold.kind}: ${hold.question ?? hold.message ?? `decide the held call of ${hold.toolName ?? 'a tool'}`}`,
    ...(call ? [`    call: ${call}`] : []),
    ...(hold.prompt ? [`    user asked: ${hold.prompt}`] : []),
    `    run: ${!own && hold.asked ? `${holder} was asked: ${hold.asked}` : holder}`,
    ...(hold.modelText ? [`    model: ${hold.modelText}`] : []),
    ...(hold.votes ? [`    votes: ${votesText(hold.votes)}`] : []),
    ...[hold.approve, hold.deny, hold.decide].filter((line) => line !== undefined).map((line) => `    ${line}`),
  ];
}

export async function commandHolds(config: KeelConfig, options: CliOptions): Promise<number> {
  return withClientRefusing(config, options, 'holds', async (client) => {
    const holds = await client.holds();
    print(options.json, { holds }, holds.map((hold) => describeHold(hold).join('\n')).join('\n\n') || '(no holds waiting)');
    return EXIT.ok;
  });
}
