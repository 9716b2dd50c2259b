/**
 * The `keel` command line (docs/cli.md: a contract, scripts call it as written).
 * Exit codes: 0 done, 1 the run failed or was refused, 2 bad usage or bad config.
 * Node side.
 */
import { ConfigError, loadConfig } from '../config/load';
import { KeelError } from '../core/errors';
import { ServerError } from '../server/server-error';
import { DEV_WORKER_ENV } from '../dev/dev-protocol';
import { EXIT, UsageError, later, reportFailure } from './common';
import { USAGE, parse, uiOptions } from './args';
import type { CliOptions } from './common';
import type { KeelConfig } from '../config/schema';
import { commandRun, commandWatch } from './run';
import { commandCost, commandHolds, commandList, commandStatus, commandTasks } from './inspect';
import { commandAbort, commandDecide, commandFork, commandSteer } from './control';
import { commandDeploy, commandEval, commandHistory, commandNamespace, commandStorage } from './operate';
import { commandInit, commandSetup, printVersion } from './project';

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

/** A command that reads the project's config. */
async function configured(command: string, positionals: string[], options: CliOptions, config: KeelConfig): Promise<number> {
  switch (command) {
    // The worker, the server and the demo load only for the commands that need them.
    case 'server':
      return await later<typeof import('../ops/processes')>('../ops/processes').runServer(config);
    case 'worker':
      return await later<typeof import('../ops/processes')>('../ops/processes').runWorker(config, { allowEmpty: options['allow-empty'] });
    case 'dev':
      return await later<typeof import('../dev/dev-loop')>('../dev/dev-loop').runDev(config, { allowEmpty: options['allow-empty'] });
    case 'serve':
    case 'ui':
      return await later<typeof import('../ui/command')>('../ui/command').runUi(config, uiOptions(options));
    case 'mcp':
      return await later<typeof import('../ui/command')>('../ui/command').runMcp(config);
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
    case 'cost':
      return await commandCost(config, positionals, options);
    case 'abort':
      return await commandAbort(config, positionals, options);
    case 'approve':
    case 'deny':
    case 'decide':
      return await commandDecide(config, command, positionals, options);
    case 'steer':
      return await commandSteer(config, positionals, options);
    case 'fork':
      return await commandFork(config, positionals, options);
    case 'tasks':
      return await commandTasks(config, positionals, options);
    case 'holds':
      return await commandHolds(config, options);
    case 'history':
      return await commandHistory(config, positionals, options);
    case 'storage':
      return await commandStorage(config, positionals, options);
    case 'eval':
      return await commandEval(config, positionals, options);
    case 'deploy':
      return await commandDeploy(config, positionals, options);
    case 'namespace':
      return await commandNamespace(config, positionals, options);
    case 'demo':
      return await later<typeof import('./demo')>('./demo').runDemo(config);
    case 'setup':
      return commandSetup(config, positionals, options);
    default:
      throw new UsageError(`unknown command "${command}"\n\n${USAGE}`);
  }
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
    return await configured(command, positionals, options, loadConfig({ path: options.config, explicit: options.config !== undefined }));
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
