/**
 * The `keel` command line (docs/cli.md: a contract, scripts call it as written).
 * Exit codes: 0 done, 1 the run failed or was refused, 2 bad usage or bad config.
 * Node side.
 */
import { durationMs } from '../core/duration';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/load';
import type { KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import type { Decision } from '../core/holds';
import type { HoldView } from '../client/holds';
import type { Usage } from '../core/usage';
import { HOLDS_MEMO_KEY, MemoHoldSchema, RunLifecycleSchema, type Interrupt, type MemoHold, type RunResult, type RunStatus } from '../core/run';
import { KEEL_STATUS } from '../core/search-attributes';
import { sessionIdProblem } from '../core/session';
import { z } from 'zod';
import { parse as parseYaml } from 'yaml';
import type { OutputOption } from '../core/output';
import { ServerError } from '../server/server-error';
import { DirectoryError, makeDirectory } from '../server/make-directory';
import { requireModule } from '../node/require-ts';
import { PACKAGE_ROOT } from '../node/package-root';
import type { KeelClient, RunHandle } from '../client/keel-client';
import { describeInterrupt, followRun, wantsColour } from './progress';
import type { LookupRefusal } from '../client/lookup-refusal';
import { DEV_WORKER_ENV } from '../dev/dev-protocol';

/** Bad usage: exit code 2, message on stderr. */
export class UsageError extends Error {}

const USAGE = `usage: keel <command> [options]

commands:
  server                      run the embedded Temporal dev server until stopped
  worker                      run one worker (start several to scale out)
  dev                         server + one worker, for local work: a save of the config or of a
                              module (or a file it imports) restarts the worker
  ui                          the web UI: inbox of holds, runs, live run view (--host, --port)
  codec-server                the Temporal Web UI's remote codec endpoint: decrypts runs sealed by
                              encryption for the UI's browser (--host, --port; default 127.0.0.1:8235)
  run <agent> <prompt...>     start a run and wait for its answer (--detach: print the run id;
                              --id <runId> or --id-prefix <prefix> to name it)
  watch <runId>               follow a run's events as keel run prints them, until it ends
  list                        the namespace's runs, newest first (--agent <name>, --status <state>,
                              --limit <n>; state: waiting, running, completed, failed, ...)
  status <runId>              the run's state, turn, usage and pending interrupts (JSON)
  abort <runId>               cancel a run
  approve <runId> <id>        approve a pending interrupt
  deny <runId> <id>           deny a pending interrupt (--reason <text>)
  decide <runId> <id> <json>  decide a pending interrupt with a JSON value matching its decision
                              schema (keel status shows it): sent as { restart: <json> }
  steer <runId> <text...>     add a user message to a running run, taken at its next model call
                              (--interrupt: cancel the model call in flight and answer it at once;
                              --agent <agent>-<n>: a sub-agent run below it; --id <id>: sent again
                              with the same id, it is added once; keel steer <agent> <text>
                              --session <id>: the session's running turn)
  holds                       every hold waiting for a decision, with the command that decides it
  tasks <runId>               background tasks of a run (JSON)
  demo                        start what is needed and run the demo agent end to end
  init [dir]                  write a runnable project (temporal.yaml, an agents module with a
                              scripted model, a tool and an approval, a test of it); never
                              overwrites a file
  setup                       find the temporal binary, or install it into the project's .keel/bin
                              (what dev, server and the testing kit do when there is none)
  history export <runId>      the run's Temporal history as JSON (--out <file>; default stdout),
                              for replayHistories of keel-agents/testing
  namespace setup             register temporal.namespace on a cluster when missing (--retention
                              <duration>, default 3 days) and keel's search attributes in it;
                              says what already existed
  storage gc                  delete stored payloads no run refers to any more (runs Temporal
                              deleted at the end of their retention), older than --min-age
                              (default 1 hour); --dry-run lists them
  deploy check                replay recent runs of every agent (open and closed, --per-agent
                              of each, default 10) against this build's workflow code; names
                              each run that would not replay and its first diverging event,
                              exit 1 if any (for CI before a rollout)

options:
  --config <file>             config file (default ./temporal.yaml)
  --json                      print one JSON object on stdout, nothing else
  --detach                    (run) return at once with the run id
  --session <id>              (run, steer) a turn of this session of a server-managed agent
  --interrupt                 (steer) cancel the model call in flight (never a tool call)
  --output-schema <file>      (run) the answer must be one JSON value matching this JSON Schema
                              (or { schema, retries }): printed as JSON, in --json's "output"
  --reason <text>             (deny) why
  --out <file>                (history export) write the history to this file
  --min-age <duration>        (storage gc) keep unreferenced payloads younger than this
  --dry-run                   (storage gc) report what would be deleted, delete nothing
  --per-agent <n>             (deploy check) most runs replayed per agent (default 10)
  --retention <duration>      (namespace setup) retention of a namespace it registers
  --as <name>                 (approve, deny, decide) who decides, recorded with the decision in
                              the run's status and result (default: <user>@<host>)
  --queue                     (approve, deny, decide) send the decision even when no worker polls;
                              it is recorded in the run's history and applied when a worker starts
  --host <address>            (ui, codec-server) listen here (default 127.0.0.1; elsewhere needs
                              KEEL_UI_TOKEN or KEEL_CODEC_TOKEN)
  --port <n>                  (ui, codec-server) listen on this port (default ui.port 8234,
                              codecServer.port 8235; 0: a free one)
  --allow-empty               (worker, dev) start even when the config registers no agents,
                              tools or models
  -v, --version               keel's version
  -h, --help                  this help`;

/** Exit codes. */
export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;

interface CliOptions {
  config?: string;
  json: boolean;
  detach: boolean;
  session?: string;
  'output-schema'?: string;
  reason?: string;
  id?: string;
  'id-prefix'?: string;
  queue: boolean;
  interrupt: boolean;
  'allow-empty': boolean;
  as?: string;
  agent?: string;
  status?: string;
  limit?: string;
  host?: string;
  port?: string;
  out?: string;
  'dry-run': boolean;
  'min-age'?: string;
  'per-agent'?: string;
  retention?: string;
}

/** The options that take a whole number, and what each takes: read by `numberOption` alone. */
const NUMBER_OPTIONS = {
  limit: { min: 1, max: Number.MAX_SAFE_INTEGER, means: 'a whole number of runs, 1 or more' },
  'per-agent': { min: 1, max: Number.MAX_SAFE_INTEGER, means: 'a whole number of runs, 1 or more' },
  port: { min: 0, max: 65535, means: 'a port number from 0 to 65535' },
} as const;

/** A number option's value, checked against what it takes (a bad one is a UsageError naming the option); undefined when not given. */
function numberOption(options: CliOptions, name: keyof typeof NUMBER_OPTIONS): number | undefined {
  const text = options[name];
  if (text === undefined) return undefined;
  const { min, max, means } = NUMBER_OPTIONS[name];
  const value = /^\s*[+-]?\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max)) throw new UsageError(`--${name}: ${means}, not "${text}"`);
  return value;
}

/** `--port -1` as `--port=-1`: parseArgs takes a value that starts with a dash for a missing one, which would hide what is wrong with it. */
function negativeNumbersJoined(argv: string[]): string[] {
  const args: string[] = [];
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index]!;
    const next = argv[index + 1];
    if (arg === '--') return [...args, ...argv.slice(index)];
    if (arg.slice(2) in NUMBER_OPTIONS && arg.startsWith('--') && next !== undefined && /^-\d/.test(next)) {
      args.push(`${arg}=${next}`);
      index++;
    } else args.push(arg);
  }
  return args;
}

function parse(argv: string[]): { command: string | undefined; positionals: string[]; options: CliOptions; help: boolean } {
  let parsed;
  try {
    parsed = parseArgs({
      args: negativeNumbersJoined(argv),
      allowPositionals: true,
      options: {
        config: { type: 'string' },
        json: { type: 'boolean', default: false },
        detach: { type: 'boolean', default: false },
        session: { type: 'string' },
        'output-schema': { type: 'string' },
        reason: { type: 'string' },
        id: { type: 'string' },
        'id-prefix': { type: 'string' },
        queue: { type: 'boolean', default: false },
        interrupt: { type: 'boolean', default: false },
        as: { type: 'string' },
        agent: { type: 'string' },
        status: { type: 'string' },
        limit: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        out: { type: 'string' },
        'dry-run': { type: 'boolean', default: false },
        'per-agent': { type: 'string' },
        'min-age': { type: 'string' },
        retention: { type: 'string' },
        version: { type: 'boolean', short: 'v', default: false },
        'allow-empty': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const [command, ...positionals] = parsed.positionals;
  const { help, version, ...options } = parsed.values;
  return { command: version && !command ? 'version' : command, positionals, options, help };
}

/** Says on stderr that `command` failed and why; with --json, also as `{ "error": ... }` on stdout. */
function refuse(options: Pick<CliOptions, 'json'>, command: string, failure: KeelError, { withStatus = false } = {}): number {
  return reportFailure(options.json, `keel ${command}: ${withStatus ? `${failure.status}: ` : ''}${failure.message}`, failure.toJSON(), EXIT.failed);
}

/** Writes `line` on stderr and, with --json, `{ "error": failure }` on stdout; returns `code`. */
function reportFailure(json: boolean, line: string, failure: { status: string; message: string }, code: number): number {
  process.stderr.write(`${line}\n`);
  if (json) print(true, { error: failure });
  return code;
}

/** Warns on stderr when no worker polls the task queue: a run there waits until one starts. */
async function warnWithoutWorkers(client: KeelClient, config: KeelConfig, command: string): Promise<boolean> {
  const polling = await client.workersPolling().catch(() => undefined);
  if (polling !== 0) return false;
  process.stderr.write(
    `keel ${command}: no worker is polling task queue "${config.taskQueue}" at ${config.temporal.address}; the run waits, durably, until one starts (npx keel worker)\n`,
  );
  return true;
}

function print(json: boolean, value: unknown, human?: string): void {
  if (json || human === undefined) process.stdout.write(`${JSON.stringify(value, null, json ? undefined : 2)}\n`);
  else process.stdout.write(`${human}\n`);
}

/** The client module: loaded by the commands that talk to Temporal, since it loads the Temporal client. */
function clientModule(): typeof import('../client/keel-client') {
  return later<typeof import('../client/keel-client')>('../client/keel-client');
}

/** The KeelError a failed call or run comes down to. */
function runErrorOf(error: unknown): KeelError {
  return clientModule().runErrorOf(error);
}

async function connect(config: KeelConfig): Promise<KeelClient> {
  try {
    return await clientModule().KeelClient.connect(config);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    // A server that answers, but not as configured (TLS on one side only), is a config error: say which.
    const mismatch = await later<typeof import('../worker/connect')>('../worker/connect').tlsMismatch(config);
    if (mismatch) throw mismatch;
    // A refusal known at once already says where and why (src/worker/connect.ts).
    const why =
      KeelError.isInstance(error) && error.status === 'UNAVAILABLE'
        ? error.message
        : `cannot reach Temporal at ${config.temporal.address}: ${(error as Error).message}`;
    throw new KeelError('UNAVAILABLE', `${why}. Start one with \`npx keel server\` (or \`npx keel dev\`).`);
  }
}

/** Runs `work` with a connected client, closing it afterwards. */
async function withClient<T>(config: KeelConfig, work: (client: KeelClient) => Promise<T>): Promise<T> {
  const client = await connect(config);
  try {
    return await work(client);
  } finally {
    await client.close();
  }
}

/**
 * What a run used, for a person: tokens in and out, and its cost in USD when its models have a
 * price (or its tools reported one). Empty when the run used nothing it counts.
 */
function usageLine(usage: Usage): string {
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

/** Reads the status query, bounded in time; undefined when no worker answers. */
async function tryStatus(client: KeelClient, handle: RunHandle, timeoutMs = 5000): Promise<RunStatus | undefined> {
  try {
    return await client.temporal.withDeadline(Date.now() + timeoutMs, () => handle.status());
  } catch {
    return undefined;
  }
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

async function commandRun(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  const [agent, ...words] = positionals;
  if (!agent || words.length === 0) throw new UsageError('keel run needs an agent and a prompt: keel run <agent> <prompt...>');
  const output = options['output-schema'] === undefined ? undefined : readOutputSchema(options['output-schema']);
  if (output && options.session !== undefined)
    throw new UsageError('keel run: --output-schema is for a run, not a session turn (give the agent an output schema)');
  return withClient(config, async (client) => {
    // A session's turn runs as a run of its own: send it detached, then follow that run.
    let session: { sessionId: string; snapshotId: string } | undefined;
    let handle: RunHandle;
    if (options.session !== undefined) {
      const problem = sessionIdProblem(options.session);
      if (problem) throw new UsageError(`keel run --session: ${problem}`);
      try {
        const turn = await client.session(agent, options.session).send(words.join(' '), { detach: true });
        session = { sessionId: turn.sessionId, snapshotId: turn.snapshotId };
        handle = client.getHandle(turn.runId);
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
  /** The session turn the run is, printed with its outcome. */
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
        onInterrupt: (interrupt: Interrupt) => describeInterrupt(handle.runId, interrupt).forEach((line) => process.stderr.write(`${line}\n`)),
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
async function commandWatch(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
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

/** `keel list`: the namespace's runs, newest first, by agent and state. */
async function commandList(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  if (positionals.length) throw new UsageError(`keel list takes no arguments (filter with --agent, --status, --limit); got ${positionals.join(' ')}`);
  const state = options.status === undefined ? undefined : RunLifecycleSchema.safeParse(options.status);
  if (state && !state.success)
    throw new UsageError(`keel list --status: "${options.status}" is not a run state; one of ${RunLifecycleSchema.options.join(', ')}`);
  const limit = numberOption(options, 'limit') ?? 50;
  return withClient(config, async (client) => {
    try {
      const runs = await client.list({
        ...(options.agent !== undefined ? { agent: options.agent } : {}),
        ...(state?.success ? { state: state.data } : {}),
        limit,
      });
      const line = (run: (typeof runs)[number]) =>
        `${run.runId}  ${run.state}${run.holds ? ` (${run.holds} hold${run.holds > 1 ? 's' : ''})` : ''}  ${run.agent ?? '?'}  ${run.startedAt}${run.prompt ? `  ${run.prompt}` : ''}`;
      print(options.json, { runs }, runs.map(line).join('\n') || '(no runs)');
      return EXIT.ok;
    } catch (error) {
      return refuse(options, 'list', runErrorOf(error));
    }
  });
}

/** `keel --version`. */
function printVersion(options: CliOptions): number {
  const { version } = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };
  print(options.json, { version }, `keel ${version}`);
  return EXIT.ok;
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

async function commandStatus(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
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
    });
    return EXIT.ok;
  });
}

async function commandTasks(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  const [runId] = positionals;
  if (!runId) throw new UsageError('keel tasks needs a run id');
  return withClient(config, async (client) => {
    try {
      const tasks = await client.getHandle(runId).tasks();
      const describe = (task: (typeof tasks)[number]) =>
        `${task.taskId}  ${task.status}${task.result ? `  ${task.result}` : ''}${task.error ? `  ${task.error.status}: ${task.error.message}` : ''}${(task.interrupts ?? []).map((hold) => `\n  ${hold.id}  ${hold.kind}${hold.toolName ? ` ${hold.toolName}` : ''}${[hold.approve, hold.deny, hold.decide].map((line) => (line ? `\n    ${line}` : '')).join('')}`).join('')}`;
      print(options.json, { tasks }, tasks.map(describe).join('\n') || '(no background tasks)');
      return EXIT.ok;
    } catch (error) {
      return refuse(options, 'tasks', runErrorOf(error));
    }
  });
}

async function commandAbort(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  const [target] = positionals;
  if (!target) throw new UsageError('keel abort needs a run id or a task id');
  return withClient(config, async (client) => {
    try {
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
    } catch (error) {
      return refuse(options, 'abort', runErrorOf(error));
    }
  });
}

/** How long `keel approve` / `keel deny` wait for a worker to take the decision. */
const DECISION_WAIT_MS = 15_000;

/** The decision a decide command sends: an approval, a denial, or (decide) a restart with the JSON value given. */
function decisionOf(command: 'approve' | 'deny' | 'decide', positionals: string[], options: CliOptions): Decision {
  const [runId, interruptId, value] = positionals;
  const usage = command === 'decide' ? 'keel decide <runId> <interruptId> <json>' : `keel ${command} <runId> <interruptId>`;
  if (!runId || !interruptId || (command === 'decide' && value === undefined))
    throw new UsageError(
      `keel ${command} needs ${command === 'decide' ? 'a run id, an interrupt id and a JSON value' : 'a run id and an interrupt id'}: ${usage}`,
    );
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

async function commandDecide(config: KeelConfig, command: 'approve' | 'deny' | 'decide', positionals: string[], options: CliOptions): Promise<number> {
  const decision = decisionOf(command, positionals, options);
  const runId = positionals[0]!;
  const { interruptId } = decision;
  const word = 'approved' in decision ? (decision.approved ? 'approved' : 'denied') : 'decided';
  return withClient(config, async (client) => {
    try {
      const handle = client.getHandle(runId);
      const description = await handle.describe().catch((error: unknown) => {
        throw runErrorOf(error);
      });
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
    } catch (error) {
      return refuse(options, command, runErrorOf(error));
    }
  });
}

/**
 * `keel steer <runId> <text...>` (or `keel steer <agent> <text...> --session <id>`): sends the
 * `steer` update. Exit 0 when the run took it, 2 for bad input (no text, an empty one), 1 when
 * the run (or session) refused it: it has ended, or no turn runs.
 */
async function commandSteer(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
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
      const where = session ? `the running turn of session ${options.session}` : `run ${options.agent !== undefined ? `${target}/${options.agent}` : target}`;
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
    ...[hold.approve, hold.deny, hold.decide].filter((line) => line !== undefined).map((line) => `    ${line}`),
  ];
}

async function commandHolds(config: KeelConfig, options: CliOptions): Promise<number> {
  return withClient(config, async (client) => {
    try {
      const holds = await client.holds();
      print(options.json, { holds }, holds.map((hold) => describeHold(hold).join('\n')).join('\n\n') || '(no holds waiting)');
      return EXIT.ok;
    } catch (error) {
      return refuse(options, 'holds', runErrorOf(error));
    }
  });
}

function commandInit(positionals: string[]): number {
  const [target, ...rest] = positionals;
  if (rest.length) throw new UsageError(`keel init takes one directory at most: keel init [dir]; got ${positionals.join(' ')}`);
  const { initProject, InitRefusal } = later<typeof import('../dev/init')>('../dev/init');
  try {
    const { dir, written, packageJson } = initProject(target);
    const { created, scripts, dependencies } = packageJson;
    const gained = [...(scripts.length ? [`the ${scripts.join(' and ')} script${scripts.length > 1 ? 's' : ''}`] : []), ...dependencies];
    const lines = [
      `keel init: wrote ${[...written, ...(created ? ['package.json'] : [])].join(', ')} in ${dir}${gained.length ? `; package.json gained ${gained.join(', ')}` : ''}`,
      '',
      ...(target ? [`  cd ${target}`] : []),
      // What package.json now lists and node_modules may lack (typescript, for npm run typecheck); npm test runs without it.
      ...(created || dependencies.length ? ['  npm install                                # what package.json lists (typescript, for npm run typecheck)'] : []),
      "  npm test                                   # the project's own tests, offline (a scripted model)",
      '  npx keel dev                               # a dev server and a worker; then, in another terminal:',
      '  npx keel run support "where is order 7?"',
      '  npx keel run support "refund order 7"      # waits for: npx keel approve <runId> i1',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    return EXIT.ok;
  } catch (error) {
    if (error instanceof InitRefusal) throw new UsageError(error.message.replace(/^keel init: /, 'init: '));
    throw error;
  }
}

/** `keel setup`: the temporal binary keel uses, installed into the project's .keel/bin first when there is none. */
function commandSetup(config: KeelConfig, positionals: string[], options: CliOptions): number {
  if (positionals.length) throw new UsageError(`keel setup takes no arguments; got ${positionals.join(' ')}`);
  const binary = later<typeof import('../server/dev-server')>('../server/dev-server').findTemporalBinary(config);
  print(options.json, { binary }, `keel setup: temporal at ${binary}`);
  return EXIT.ok;
}

async function commandDeploy(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  if (positionals[0] !== 'check' || positionals.length > 1)
    throw new UsageError('keel deploy needs check: keel deploy check [--per-agent <n>] [--agent <name>] [--json]');
  const perAgent = numberOption(options, 'per-agent');
  const { checkDeploy, installCheckRuntime } = later<typeof import('../ops/deploy-check')>('../ops/deploy-check');
  installCheckRuntime();
  return withClient(config, async (client) => {
    const report = await checkDeploy(client.temporal, config, {
      ...(perAgent !== undefined ? { perAgent } : {}),
      ...(options.agent ? { agent: options.agent } : {}),
    });
    if (options.json) print(true, report);
    else {
      const total = Object.values(report.checked).reduce((sum, count) => sum + count, 0);
      const agents =
        Object.entries(report.checked)
          .map(([agent, count]) => `${agent} ${count}`)
          .join(', ') || 'none';
      for (const failure of report.failures) {
        const at = failure.event ? ` at event ${failure.event.id} (${failure.event.type})` : '';
        process.stdout.write(
          `✗ run ${failure.runId} (agent ${failure.agent}, Temporal run ${failure.temporalRunId}) does not replay${at}: ${failure.message.split('\n')[0]}\n`,
        );
      }
      process.stdout.write(
        `keel deploy check: ${total - report.failures.length} of ${total} runs replay against this build (${agents})${report.failures.length ? `; ${report.failures.length} would fail` : ''}\n`,
      );
    }
    return report.failures.length ? EXIT.failed : EXIT.ok;
  });
}

async function commandStorage(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  if (positionals[0] !== 'gc' || positionals.length > 1)
    throw new UsageError('keel storage needs gc: keel storage gc [--min-age <duration>] [--dry-run] [--json]');
  let minAgeMs: number | undefined;
  if (options['min-age'] !== undefined) {
    minAgeMs = durationMs(options['min-age']);
    if (minAgeMs === undefined || minAgeMs < 0) throw new UsageError(`--min-age: a duration such as "1 hour" or "30m", not "${options['min-age']}"`);
  }
  const { collectGarbage } = later<typeof import('../storage/gc')>('../storage/gc');
  return withClient(config, async (client) => {
    const report = await collectGarbage(client.temporal, config, { ...(minAgeMs !== undefined ? { minAgeMs } : {}), dryRun: options['dry-run'] });
    if (options.json) print(true, report);
    else {
      const verb = options['dry-run'] ? 'would delete' : 'deleted';
      process.stdout.write(
        `keel storage gc: ${verb} ${report.deleted.length} of ${report.stored} stored payloads (${report.freedBytes} bytes); ${report.referenced} referenced by ${report.runs} runs, ${report.young} kept as younger than the minimum age\n`,
      );
    }
    return EXIT.ok;
  });
}

async function commandHistory(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  const [verb, runId, ...rest] = positionals;
  if (verb !== 'export' || !runId || rest.length) throw new UsageError('keel history needs export and a run id: keel history export <runId> [--out <file>]');
  const { exportHistory, historyFileName, continuedNote } = later<typeof import('../ops/history-export')>('../ops/history-export');
  return withClient(config, async (client) => {
    let exported: Awaited<ReturnType<typeof exportHistory>>;
    try {
      exported = await exportHistory(client, runId);
    } catch (error) {
      return refuse(options, 'history export', runErrorOf(error));
    }
    if (options.out === undefined) {
      process.stdout.write(exported.text);
      if (exported.continuedFrom) process.stderr.write(`keel history export: printed the history of run ${runId}${continuedNote(exported)}\n`);
      return EXIT.ok;
    }
    // A directory (one that exists, or a path ending in /, made when missing) gets <runId>.json, the name replayHistories reads the run id from.
    const toDirectory = /[\\/]$/.test(options.out) || (existsSync(options.out) && statSync(options.out).isDirectory());
    const file = toDirectory ? join(options.out, historyFileName(runId)) : options.out;
    try {
      if (toDirectory) makeDirectory(options.out);
      writeFileSync(file, exported.text);
    } catch (error) {
      const reason = error instanceof DirectoryError ? error.message : ((error as NodeJS.ErrnoException).code ?? (error as Error).message);
      throw new UsageError(`keel history export --out: cannot write ${file}: ${reason}`);
    }
    process.stderr.write(`keel history export: wrote the history of run ${runId}${continuedNote(exported)} to ${file}\n`);
    return EXIT.ok;
  });
}

/** A module of the CLI, loaded when a command needs it (the worker, server and demo are slow to load). */
function later<T>(specifier: string): T {
  return requireModule<T>(specifier, __filename);
}

/** Runs the CLI; resolves to the exit code. Spans buffered for an OTLP exporter are sent before it resolves. */
export async function main(argv: string[]): Promise<number> {
  try {
    return await command(argv);
  } finally {
    await later<typeof import('../telemetry/tracing')>('../telemetry/tracing')
      .activeTracing()
      ?.shutdown()
      .catch(() => undefined);
  }
}

/** `--host` and `--port` of `keel ui`, checked. */
function uiOptions(options: CliOptions): { host?: string; port?: number } {
  const port = numberOption(options, 'port');
  return { ...(options.host !== undefined ? { host: options.host } : {}), ...(port !== undefined ? { port } : {}) };
}

async function command(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parse(argv);
    if (parsed.help || !parsed.command) {
      (parsed.help ? process.stdout : process.stderr).write(`${USAGE}\n`);
      return parsed.help ? EXIT.ok : EXIT.usage;
    }
    const { command, positionals, options } = parsed;
    // Needs no config: the version of the keel package this command line is.
    if (command === 'version') return printVersion(options);
    // Writes a project: needs no config (there is none yet).
    if (command === 'init') return commandInit(positionals);
    // A worker process of keel dev reads its config when keel dev says start (and again on each reload: it is a new process).
    if (command === 'worker' && process.env[DEV_WORKER_ENV] && process.send)
      return await later<typeof import('../dev/dev-worker')>('../dev/dev-worker').runDevWorker({
        ...(options.config !== undefined ? { configPath: options.config } : {}),
        allowEmpty: options['allow-empty'],
      });
    const config = loadConfig({ path: options.config, explicit: options.config !== undefined });
    switch (command) {
      // The worker, the server and the demo load only for the commands that need them.
      case 'server':
        return await later<typeof import('../ops/processes')>('../ops/processes').runServer(config);
      case 'worker':
        return await later<typeof import('../ops/processes')>('../ops/processes').runWorker(config, { allowEmpty: options['allow-empty'] });
      case 'dev':
        return await later<typeof import('../dev/dev-loop')>('../dev/dev-loop').runDev(config, { allowEmpty: options['allow-empty'] });
      case 'ui':
        return await later<typeof import('../ui/command')>('../ui/command').runUi(config, uiOptions(options));
      case 'codec-server':
        return await later<typeof import('../ui/command')>('../ui/command').runCodecServer(config, uiOptions(options));
      case 'run':
        return await commandRun(config, positionals, options);
      case 'status':
        return await commandStatus(config, positionals, options);
      case 'watch':
        return await commandWatch(config, positionals, options);
      case 'list':
        return await commandList(config, positionals, options);
      case 'abort':
        return await commandAbort(config, positionals, options);
      case 'approve':
      case 'deny':
      case 'decide':
        return await commandDecide(config, command, positionals, options);
      case 'steer':
        return await commandSteer(config, positionals, options);
      case 'tasks':
        return await commandTasks(config, positionals, options);
      case 'holds':
        return await commandHolds(config, options);
      case 'history':
        return await commandHistory(config, positionals, options);
      case 'storage':
        return await commandStorage(config, positionals, options);
      case 'deploy':
        return await commandDeploy(config, positionals, options);
      case 'namespace':
        if (positionals[0] !== 'setup' || positionals.length > 1)
          throw new UsageError('keel namespace needs setup: keel namespace setup [--retention <duration>] [--json]');
        return await later<typeof import('../ops/namespace-setup')>('../ops/namespace-setup').runNamespaceSetup(config, {
          ...(options.retention !== undefined ? { retention: options.retention } : {}),
          json: options.json,
        });
      case 'demo':
        return await later<typeof import('./demo')>('./demo').runDemo(config);
      case 'setup':
        return commandSetup(config, positionals, options);
      default:
        throw new UsageError(`unknown command "${command}"\n\n${USAGE}`);
    }
  } catch (error) {
    // With --json, scripts get the failure on stdout too: { "error": { "status", "message" } }.
    const json = parsed?.options.json === true;
    const fail = (line: string, failure: { status: string; message: string }, code: number): number => reportFailure(json, `keel: ${line}`, failure, code);
    if (error instanceof UsageError || error instanceof ConfigError)
      return fail(error.message, { status: 'INVALID_ARGUMENT', message: error.message }, EXIT.usage);
    if (error instanceof ServerError) return fail(error.message, { status: 'UNAVAILABLE', message: error.message }, EXIT.failed);
    if (KeelError.isInstance(error)) return fail(`${error.status}: ${error.message}`, error.toJSON(), EXIT.failed);
    throw error;
  }
}
