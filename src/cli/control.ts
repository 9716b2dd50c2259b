/**
 * The commands that act on a run: `keel abort`, `keel approve`, `keel deny`, `keel decide` (a
 * pending hold's decision), `keel steer` and `keel fork`. Node side.
 */
import { hostname, userInfo } from 'node:os';
import type { KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import type { Decision } from '../core/holds';
import { EXIT, UsageError, numberOption, print, refuse, reportFailure, type CliOptions } from './common';
import { runErrorOf, withClient, withClientRefusing } from './client';

export async function commandAbort(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  const [target] = positionals;
  if (!target) throw new UsageError('keel abort needs a run id or a task id');
  return withClientRefusing(config, options, 'abort', async (client) => {
    // A task id is <agent>:<runId>; a run id may hold a colon too, so a run of that exact id wins.
    const isRun = await client
      .getHandle(target)
      .describe()
      .then(
        () => true,
        () => false,
      );
    if (!isRun && target.indexOf(':') > 0) {
      await client.abortTask(target);
      print(options.json, { taskId: target, status: 'aborting' }, `abort requested for task ${target}`);
      return EXIT.ok;
    }
    await client.getHandle(target).cancel();
    print(options.json, { runId: target, status: 'cancelling' }, `cancellation requested for ${target}`);
    return EXIT.ok;
  });
}

/** How long `keel approve` / `keel deny` wait for a worker to take the decision. */
const DECISION_WAIT_MS = 15_000;

/** The decision a decide command sends: an approval, a denial, or (decide) a restart with the JSON value given. */
function decisionOf(command: 'approve' | 'deny' | 'decide', positionals: string[], options: CliOptions): Decision {
  const [runId, interruptId, value] = positionals;
  const usage = command === 'decide' ? 'keel decide <runId> <interruptId> <json>' : `keel ${command} <runId> <interruptId>`;
  if (!runId || !interruptId || (command === 'decide' && value === undefined))
    throw new UsageError(`keel ${command} needs ${command === 'decide' ? 'a run id, a hold id and a JSON value' : 'a run id and a hold id'}: ${usage}`);
  const decidedBy = options.as ?? defaultDecider();
  if (command !== 'decide')
    return { interruptId, approved: command === 'approve', ...(options.reason !== undefined ? { reason: options.reason } : {}), decidedBy };
  let restart: unknown;
  try {
    restart = JSON.parse(value!);
  } catch (error) {
    throw new UsageError(`keel decide: the decision is not JSON (${(error as Error).message}): ${value}`);
  }
  if (restart !== true && (typeof restart !== 'object' || restart === null || Array.isArray(restart)))
    throw new UsageError(`keel decide: the decision is a JSON object (or true), matching the hold's decision schema (keel status ${runId}); got ${value}`);
  return { interruptId, restart: restart as Record<string, unknown> | true, decidedBy };
}

/** Who decides from this terminal, when --as does not say: `<user>@<host>`. */
function defaultDecider(): string {
  let user = process.env.USER ?? 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No user name for this uid (a container): the environment's word, or unknown.
  }
  return `${user}@${hostname()}`;
}

export async function commandDecide(config: KeelConfig, command: 'approve' | 'deny' | 'decide', positionals: string[], options: CliOptions): Promise<number> {
  const decision = decisionOf(command, positionals, options);
  const runId = positionals[0]!;
  const { interruptId } = decision;
  const word = 'approved' in decision ? (decision.approved ? 'approved' : 'denied') : 'decided';
  return withClientRefusing(config, options, command, async (client) => {
    const handle = client.getHandle(runId);
    const description = await handle.describe();
    const taskQueue = description.taskQueue;
    // Nobody would take the decision now: say so rather than wait, unless told to queue it.
    const polling = description.status.name === 'RUNNING' ? await client.workersPolling(taskQueue).catch(() => undefined) : undefined;
    if (polling === 0 && !options.queue) {
      return refuse(
        options,
        command,
        new KeelError(
          'UNAVAILABLE',
          `no worker polls task queue "${taskQueue}" at ${config.temporal.address}, so nothing would take the decision now; it was not sent. Start a worker (npx keel worker), or send it anyway with --queue: it is then recorded in the run's history and applied when a worker starts`,
        ),
      );
    }
    const said = 'approved' in decision ? { approved: decision.approved } : {};
    if (options.queue) {
      // A signal is recorded in history at once, worker or not; the run takes (or refuses) it when a worker runs it.
      await handle.signalDecision(decision);
      print(
        options.json,
        { runId, interruptId, ...said, decidedBy: decision.decidedBy, queued: true },
        `queued: the decision (${word}) on ${interruptId} recorded in the history of run ${runId}; a worker applies it when it runs the run (a refusal shows in keel status ${runId}, under refusedSignals)`,
      );
      return EXIT.ok;
    }
    const accepted = await handle.decide(decision, { timeoutMs: DECISION_WAIT_MS });
    print(options.json, { runId, ...accepted, ...said, decidedBy: decision.decidedBy }, `${word} ${accepted.decided.join(', ')} of run ${runId}`);
    return EXIT.ok;
  });
}

/**
 * `keel steer <runId> <text...>` (or `keel steer <agent> <text...> --session <id>`): sends the
 * `steer` update. Exit 0 when the run took it, 2 for bad input (no text, an empty one), 1 when
 * the run (or session) refused it: it has ended, or none runs.
 */
export async function commandSteer(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  const [target, ...words] = positionals;
  const text = words.join(' ');
  const usage = 'keel steer <runId> <text...> [--interrupt] [--agent <agent>-<n>] [--id <id>], or keel steer <agent> <text...> --session <id>';
  if (!target || words.length === 0)
    throw new UsageError(`keel steer needs ${target ? 'the text of the message' : 'a run id and the text of the message'}: ${usage}`);
  if (options.session !== undefined && options.agent !== undefined)
    throw new UsageError('keel steer: --agent names a sub-agent run below a run; with --session the first argument is the agent');
  return withClient(config, async (client) => {
    try {
      const sent = { ...(options.interrupt ? { interrupt: true } : {}), ...(options.id !== undefined ? { steerId: options.id } : {}) };
      const session = options.session !== undefined ? client.session(target, options.session) : undefined;
      const record = session
        ? await session.steer(text, sent)
        : await client.getHandle(target).steer(text, { ...sent, ...(options.agent !== undefined ? { agent: options.agent } : {}) });
      const where = session ? `the run in flight of session ${options.session}` : `run ${options.agent !== undefined ? `${target}/${options.agent}` : target}`;
      print(
        options.json,
        { ...(session ? { sessionId: options.session } : { runId: target, ...(options.agent !== undefined ? { agent: options.agent } : {}) }), ...record },
        `steering message ${record.id} taken by ${where} (${record.state}${record.state === 'pending' ? ': added before its next model call' : ''}${record.cancelledModelCall ? '; the model call in flight was cancelled' : ''})`,
      );
      return EXIT.ok;
    } catch (error) {
      const failure = runErrorOf(error);
      if (failure.status === 'INVALID_ARGUMENT') return reportFailure(options.json, `keel steer: ${failure.message}`, failure.toJSON(), EXIT.usage);
      return refuse(options, 'steer', failure);
    }
  });
}

/** `--tool-result <callId>=<json>`, each: the results a fork changes, by call id. */
function toolResultsOf(given: readonly string[]): Record<string, unknown> {
  const results: Record<string, unknown> = {};
  for (const entry of given) {
    const equals = entry.indexOf('=');
    if (equals <= 0) throw new UsageError(`--tool-result: <callId>=<json> (a call id such as 2.0, as keel fork names them), not "${entry}"`);
    const id = entry.slice(0, equals);
    try {
      results[id] = JSON.parse(entry.slice(equals + 1));
    } catch (error) {
      throw new UsageError(`--tool-result ${id}: the result is not JSON (${(error as Error).message}): ${entry.slice(equals + 1)}`);
    }
  }
  return results;
}

/** `keel fork <runId> --at <turn>`: a new run from the run's conversation up to that turn (docs/fork.md). */
export async function commandFork(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  const [source, ...rest] = positionals;
  if (!source || rest.length)
    throw new UsageError('keel fork needs one run id: keel fork <runId> --at <turn> [--message <text>] [--tool-result <callId>=<json>]');
  const at = numberOption(options, 'at');
  if (at === undefined) throw new UsageError('keel fork needs the turn to fork at: --at <turn> (0: before its first model call)');
  const toolResults = toolResultsOf(options['tool-result'] ?? []);
  return withClientRefusing(config, options, 'fork', async (client) => {
    const started = await client.getHandle(source).fork({
      at,
      toolResults,
      ...(options.message !== undefined ? { message: options.message } : {}),
      ...(options.agent !== undefined ? { agent: options.agent } : {}),
      ...(options.model !== undefined ? { model: options.model } : {}),
      ...(options.id !== undefined ? { runId: options.id } : {}),
    });
    const { runId, turn, usage } = started;
    const spent = Object.keys(usage).length ? `; the conversation up to there spent ${JSON.stringify(usage)} (counted in ${source}, not again)` : '';
    print(options.json, { runId, source, turn, usage }, `forked ${source} at turn ${turn}: run ${runId}${spent}\nfollow it with: npx keel watch ${runId}`);
    return EXIT.ok;
  });
}
