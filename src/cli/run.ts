/**
 * `keel run` and `keel watch`: start a run (or a session's next run) and follow its events until it
 * ends, then print its outcome; the exit code is the run's. Node side.
 */
import { readFileSync } from 'node:fs';
import type { KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import type { Usage } from '../core/usage';
import type { Hold, RunResult, RunStatus } from '../core/run';
import { sessionIdProblem } from '../core/session';
import { parse as parseYaml } from 'yaml';
import type { OutputOption } from '../core/output';
import type { KeelClient, RunHandle } from '../client/keel-client';
import { describeHold, followRun, wantsColour } from './progress';
import type { LookupRefusal } from '../client/lookup-refusal';
import { EXIT, UsageError, later, print, refuse, type CliOptions } from './common';
import { runErrorOf, tryStatus, warnWithoutWorkers, withClient } from './client';

/**
 * What a run used, for a person: tokens in and out, and its cost in USD when its models have a
 * price (or its tools reported one). Empty when the run used nothing it counts.
 */
export function usageLine(usage: Usage): string {
  const parts: string[] = [];
  if (usage.inputTokens !== undefined || usage.outputTokens !== undefined)
    parts.push(`${(usage.inputTokens ?? 0).toLocaleString('en-US')} input + ${(usage.outputTokens ?? 0).toLocaleString('en-US')} output tokens`);
  if (usage.cost !== undefined) parts.push(`$${usage.cost >= 1 ? usage.cost.toFixed(2) : String(Number(usage.cost.toPrecision(3)))}`);
  return parts.length ? `usage: ${parts.join(', ')}` : '';
}

/** The JSON shape of a finished or failed run (docs/cli.md: `keel run`). */
function runSummary(runId: string, result: RunResult | undefined, error: KeelError | undefined, status: RunStatus | undefined) {
  return {
    runId,
    status: error ? (error.status === 'CANCELLED' ? 'cancelled' : 'failed') : 'completed',
    finishReason: result?.finishReason ?? status?.finishReason ?? null,
    text: result?.text ?? status?.text ?? '',
    ...((result?.output ?? status?.output) !== undefined ? { output: result?.output ?? status?.output } : {}),
    usage: result?.usage ?? status?.usage ?? {},
    interrupts: status?.interrupts ?? [],
    tasks: result?.tasks ?? [],
    ...(error ? { error: error.toJSON() } : {}),
  };
}

/** The JSON Schema file of `--output-schema`, read and parsed (as JSON, or YAML). */
function readOutputSchema(file: string): OutputOption {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`keel run --output-schema: cannot read ${file}: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (error) {
    throw new UsageError(`keel run --output-schema: ${file} is neither JSON nor YAML: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError(`keel run --output-schema: ${file} must hold a JSON Schema object`);
  return value as OutputOption;
}

export async function commandRun(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  const [agent, ...words] = positionals;
  if (!agent || words.length === 0) throw new UsageError('keel run needs an agent and a prompt: keel run <agent> <prompt...>');
  const output = options['output-schema'] === undefined ? undefined : readOutputSchema(options['output-schema']);
  if (output && options.session !== undefined) throw new UsageError('keel run: --output-schema is for a run, not a session (give the agent an output schema)');
  return withClient(config, async (client) => {
    // A session's message runs as a run of its own: send it detached, then follow that run.
    let session: { sessionId: string; snapshotId: string } | undefined;
    let handle: RunHandle;
    if (options.session !== undefined) {
      const problem = sessionIdProblem(options.session);
      if (problem) throw new UsageError(`keel run --session: ${problem}`);
      try {
        const sent = await client.session(agent, options.session).send(words.join(' '), { detach: true });
        session = { sessionId: sent.sessionId, snapshotId: sent.snapshotId };
        handle = client.getHandle(sent.runId);
      } catch (error) {
        return refuse(options, 'run', runErrorOf(error), { withStatus: true });
      }
    } else {
      try {
        handle = await client.start(agent, words.join(' '), {
          ...(options.id ? { runId: options.id } : {}),
          ...(options['id-prefix'] ? { idPrefix: options['id-prefix'] } : {}),
          ...(output ? { output } : {}),
        });
      } catch (error) {
        return refuse(options, 'run', runErrorOf(error), { withStatus: true });
      }
    }
    if (options.detach) {
      print(options.json, { runId: handle.runId, status: 'running', ...session }, handle.runId);
      return EXIT.ok;
    }
    process.stderr.write(`run ${handle.runId} started (agent ${agent})\n`);
    return watchRun(client, config, handle, options, { command: 'run', agent, ...(session ? { session } : {}) });
  });
}

/** What a watched run needs said besides its events. */
interface WatchOptions {
  /** The command watching (`run` or `watch`), for what it says. */
  command: 'run' | 'watch';
  /** The agent, when this command started the run: a refusal of its lookup is then said at once. */
  agent?: string;
  /** The session run the run is, printed with its outcome. */
  session?: { sessionId: string; snapshotId: string };
}

/**
 * Follows a run's events (on stderr; with --json, only its holds) until it ends and prints its
 * outcome; the exit code is the run's. Ctrl-C stops watching, not the run: it says so, and how
 * to watch it again or abort it.
 */
async function watchRun(
  client: KeelClient,
  config: KeelConfig,
  handle: RunHandle,
  options: CliOptions,
  { command, agent, session }: WatchOptions,
): Promise<number> {
  // Ctrl-C stops the watch (and this wait), never the run.
  const stopWaiting = new AbortController();
  // A server restart while the run goes on is not its outcome: the wait reconnects.
  const done = handle.result({
    onReconnecting: (reason) => process.stderr.write(`keel ${command}: lost Temporal (${reason}); waiting for it to come back, the run goes on\n`),
    signal: stopWaiting.signal,
  });
  await warnWithoutWorkers(client, config, command);
  const stopFollowing = new AbortController();
  // A run whose agent no polling worker has says so at once (it keeps retrying, in case one starts).
  const refused =
    agent === undefined
      ? Promise.resolve(undefined)
      : watchLookup(client, handle.runId, done).then((refusal) => {
          if (refusal) stopFollowing.abort();
          return refusal;
        });
  const interrupted = new Promise<'interrupted'>((resolve) => {
    const stop = () => {
      stopFollowing.abort();
      stopWaiting.abort();
      resolve('interrupted');
    };
    process.once('SIGINT', stop);
    void done.then(
      () => process.removeListener('SIGINT', stop),
      () => process.removeListener('SIGINT', stop),
    );
  });
  const following = options.json
    ? // stdout keeps its one JSON object; a hold the run waits on is said on stderr at once, with the commands that decide it.
      followRun(handle, done, () => undefined, {
        onHold: (interrupt: Hold) => describeHold(handle.runId, interrupt).forEach((line) => process.stderr.write(`${line}\n`)),
        signal: stopFollowing.signal,
      })
    : followRun(handle, done, (line) => process.stderr.write(`${line}\n`), {
        writeRaw: (text) => process.stderr.write(text),
        colour: wantsColour(process.stderr),
        signal: stopFollowing.signal,
      });
  if ((await Promise.race([following.then(() => 'followed' as const), interrupted])) === 'interrupted') {
    done.catch(() => undefined);
    const { runId } = handle;
    process.stderr.write(
      `\nkeel ${command}: stopped watching; run ${runId} goes on. Watch it again with keel watch ${runId}, or stop it with keel abort ${runId}\n`,
    );
    if (options.json) print(true, { runId, status: 'running', watching: false });
    return EXIT.interrupted;
  }
  const refusal = await Promise.race([
    refused,
    done.then(
      () => undefined,
      () => undefined,
    ),
  ]);
  if (refusal && agent !== undefined) {
    const message = describeRefusal(agent, refusal, handle.runId, config.taskQueue);
    // The run goes on; this command stops waiting for it (a wait left open holds the connection until the run ends).
    done.catch(() => undefined);
    stopWaiting.abort();
    if (options.json) print(true, { runId: handle.runId, status: 'running', error: { status: 'NOT_FOUND', message } });
    process.stderr.write(`keel run: ${message}\n`);
    return EXIT.usage;
  }
  try {
    const result = await done;
    // A structured answer is what the run gives: printed as JSON (the text is that JSON already).
    print(
      options.json,
      { ...runSummary(handle.runId, result, undefined, undefined), ...session },
      result.output !== undefined ? JSON.stringify(result.output, null, 2) : result.text,
    );
    const spent = usageLine(result.usage);
    if (!options.json && spent) process.stderr.write(`${spent}\n`);
    return EXIT.ok;
  } catch (error) {
    const failure = runErrorOf(error);
    const status = await tryStatus(client, handle);
    if (options.json) print(true, runSummary(handle.runId, undefined, failure, status));
    else {
      process.stderr.write(`run ${handle.runId} failed: ${failure.status}: ${failure.message}\n`);
      const spent = usageLine(status?.usage ?? {});
      if (spent) process.stderr.write(`${spent}\n`);
    }
    return EXIT.failed;
  }
}

/** `keel watch <runId>`: follows a run started elsewhere (or by a detached keel run) until it ends. */
export async function commandWatch(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  const [runId] = positionals;
  if (!runId) throw new UsageError('keel watch needs a run id: keel watch <runId>');
  return withClient(config, async (client) => {
    const handle = client.getHandle(runId);
    try {
      await handle.describe();
    } catch (error) {
      return refuse(options, 'watch', runErrorOf(error));
    }
    process.stderr.write(`watching run ${runId}\n`);
    return watchRun(client, config, handle, options, { command: 'watch' });
  });
}

/** Watches a run's agent lookup until it is behind the run or the run ends; resolves to a refusal every polling worker made, if any. */
async function watchLookup(client: KeelClient, runId: string, done: Promise<unknown>): Promise<LookupRefusal | undefined> {
  let ended = false;
  void done.then(
    () => (ended = true),
    () => (ended = true),
  );
  const { lookupRefusal } = later<typeof import('../client/lookup-refusal')>('../client/lookup-refusal');
  while (!ended) {
    const seen = await lookupRefusal(client.temporal, runId).catch(() => undefined);
    if (seen === 'passed') return undefined;
    if (seen) return seen;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  return undefined;
}

/** What `keel run` says when no polling worker has the run's agent (or its model or tool). */
function describeRefusal(agent: string, refusal: LookupRefusal, runId: string, taskQueue: string): string {
  const known = refusal.has.join(', ') || '(none)';
  const what =
    refusal.kind === 'agent'
      ? `unknown agent "${refusal.name}"; the workers polling task queue "${taskQueue}" know: ${known}`
      : `agent "${agent}" needs ${refusal.kind} "${refusal.name}", which no worker polling task queue "${taskQueue}" has (they have: ${known})`;
  return `${what}. The run ${runId} was created and keeps trying for up to ${refusal.retryFor} in case a worker that has it starts; stop it with keel abort ${runId}`;
}
