/**
 * The `keel` command line's words: its usage text, and argv parsed into a command, its
 * arguments and its options (a bad option is a UsageError naming it). Node side.
 */
import { parseArgs } from 'node:util';
import { OPTIONS, UsageError, numberOption, NUMBER_OPTIONS, type CliOptions } from './common';

export const USAGE = `usage: keel <command> [options]

commands:
  server                      run the embedded Temporal dev server until stopped
  worker                      run one worker (start several to scale out)
  dev                         server + one worker, for local work: a save of the config or of a
                              module (or a file it imports) restarts the worker
  serve                       keel's HTTP server: the web UI (inbox of holds, runs, live run view)
                              and the agents serve.agents names over MCP (/mcp) and A2A (/a2a/<agent>)
                              (--host, --port)
  ui                          the same server, by its older name
  mcp                         the agents serve.agents names, as MCP tools over stdio (docs/mcp.md)
  codec-server                the Temporal Web UI's remote codec endpoint: decrypts runs sealed by
                              encryption for the UI's browser (--host, --port; default 127.0.0.1:8235)
  run <agent> <prompt...>     start a run and wait for its answer (--detach: print the run id;
                              --id <runId> or --id-prefix <prefix> to name it)
  watch <runId>               follow a run's events as keel run prints them, until it ends
  list                        the namespace's runs, newest first (--agent <name>, --status <state>,
                              --tenant <t>, --owner <subject>, --limit <n>; state: waiting,
                              running, completed, failed, ...)
  status <runId>              the run's state, turn, usage and pending holds (JSON)
  cost --tenant <t>           what a tenant's runs spent, window by window, newest first (--owner
                              <subject>: an owner's; counted by Budgets of scope tenant or owner)
  abort <runId>               cancel a run
  approve <runId> <id>        approve a pending hold
  deny <runId> <id>           deny a pending hold (--reason <text>)
  decide <runId> <id> <json>  decide a pending hold with a JSON value matching its decision
                              schema (keel status shows it): sent as { restart: <json> }
  steer <runId> <text...>     add a user message to a running run, taken at its next model call
                              (--interrupt: cancel the model call in flight and answer it at once;
                              --agent <agent>-<n>: a sub-agent run below it; --id <id>: sent again
                              with the same id, it is added once; keel steer <agent> <text>
                              --session <id>: the session's run in flight)
  fork <runId> --at <turn>    a new run whose conversation is the run's up to that turn; no tool
                              call before it runs again (--message <text>: the user's message
                              there; --tool-result <callId>=<json>, repeatable: a recorded result
                              changed; --agent, --model: go on with others; --id; --json prints
                              { runId, source, turn, usage })
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
  eval <suite>                run an eval suite (YAML or a TypeScript module): its cases (recorded
                              runs, runs on the server, or written by hand) against the agents as
                              they are now, tools answered from the record, scored; a table (--json:
                              the report; --junit <file>: JUnit XML; --id <suiteId>); exit 1 when a
                              variant is below the suite's threshold
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
  --session <id>              (run, steer) a run in this session of a server-managed agent
  --interrupt                 (steer) cancel the model call in flight (never a tool call)
  --output-schema <file>      (run) the answer must be one JSON value matching this JSON Schema
                              (or { schema, retries }): printed as JSON, in --json's "output"
  --reason <text>             (deny) why
  --out <file>                (history export) write the history to this file
  --junit <file>              (eval) write the report as JUnit XML for CI
  --at <turn>                 (fork) the turn of the run the fork goes on after
  --min-age <duration>        (storage gc) keep unreferenced payloads younger than this
  --dry-run                   (storage gc) report what would be deleted, delete nothing
  --per-agent <n>             (deploy check) most runs replayed per agent (default 10)
  --retention <duration>      (namespace setup) retention of a namespace it registers
  --as <name>                 (approve, deny, decide) who decides, recorded with the decision in
                              the run's status and result (default: <user>@<host>)
  --queue                     (approve, deny, decide) send the decision even when no worker polls;
                              it is recorded in the run's history and applied when a worker starts
  --host <address>            (serve, ui, codec-server) listen here (default 127.0.0.1; elsewhere needs
                              KEEL_UI_TOKEN or KEEL_CODEC_TOKEN)
  --port <n>                  (serve, ui, codec-server) listen on this port (default ui.port 8234,
                              codecServer.port 8235; 0: a free one)
  --allow-empty               (worker, dev) start even when the config registers no agents,
                              tools or models
  -v, --version               keel's version
  -h, --help                  this help`;

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

export function parse(argv: string[]): { command: string | undefined; positionals: string[]; options: CliOptions; help: boolean } {
  let parsed;
  try {
    parsed = parseArgs({
      args: negativeNumbersJoined(argv),
      allowPositionals: true,
      options: OPTIONS,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const [command, ...positionals] = parsed.positionals;
  const { help, version, ...options } = parsed.values;
  return { command: version && !command ? 'version' : command, positionals, options, help };
}

/** `--host` and `--port` of `keel ui`, checked. */
export function uiOptions(options: CliOptions): { host?: string; port?: number } {
  const port = numberOption(options, 'port');
  return { ...(options.host !== undefined ? { host: options.host } : {}), ...(port !== undefined ? { port } : {}) };
}
