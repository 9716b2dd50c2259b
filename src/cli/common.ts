/**
 * What every command of the `keel` command line shares: its options, its exit codes, how it
 * prints a result or a refusal, and how it loads a module only when a command needs it. Node side.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { KeelError } from '../core/errors';
import { requireModule } from '../node/require-ts';

/** Bad usage: exit code 2, message on stderr. */
export class UsageError extends Error {}

/** Exit codes. */
export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;

/** The options of every command, as `parseArgs` reads them (args.ts). */
export const OPTIONS = {
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
  at: { type: 'string' },
  message: { type: 'string' },
  'tool-result': { type: 'string', multiple: true },
  model: { type: 'string' },
  junit: { type: 'string' },
  status: { type: 'string' },
  tenant: { type: 'string' },
  owner: { type: 'string' },
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
} as const satisfies ParseArgsConfig['options'];

/** The options of every command, as parsed (but --help and --version, which args.ts takes). */
export type CliOptions = Omit<ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'], 'help' | 'version'>;

/** The options that take a whole number, and what each takes: read by `numberOption` alone. */
export const NUMBER_OPTIONS = {
  limit: { min: 1, max: Number.MAX_SAFE_INTEGER, means: 'a whole number of runs, 1 or more' },
  'per-agent': { min: 1, max: Number.MAX_SAFE_INTEGER, means: 'a whole number of runs, 1 or more' },
  port: { min: 0, max: 65535, means: 'a port number from 0 to 65535' },
  at: { min: 0, max: Number.MAX_SAFE_INTEGER, means: 'a turn of the run, 0 or more' },
} as const;

/** A number option's value, checked against what it takes (a bad one is a UsageError naming the option); undefined when not given. */
export function numberOption(options: CliOptions, name: keyof typeof NUMBER_OPTIONS): number | undefined {
  const text = options[name];
  if (text === undefined) return undefined;
  const { min, max, means } = NUMBER_OPTIONS[name];
  const value = /^\s*[+-]?\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max)) throw new UsageError(`--${name}: ${means}, not "${text}"`);
  return value;
}

/** Says on stderr that `command` failed and why; with --json, also as `{ "error": ... }` on stdout. */
export function refuse(options: Pick<CliOptions, 'json'>, command: string, failure: KeelError, { withStatus = false } = {}): number {
  return reportFailure(options.json, `keel ${command}: ${withStatus ? `${failure.status}: ` : ''}${failure.message}`, failure.toJSON(), EXIT.failed);
}

/** Writes `line` on stderr and, with --json, `{ "error": failure }` on stdout; returns `code`. */
export function reportFailure(json: boolean, line: string, failure: { status: string; message: string }, code: number): number {
  process.stderr.write(`${line}\n`);
  if (json) print(true, { error: failure });
  return code;
}

export function print(json: boolean, value: unknown, human?: string): void {
  if (json || human === undefined) process.stdout.write(`${JSON.stringify(value, null, json ? undefined : 2)}\n`);
  else process.stdout.write(`${human}\n`);
}

/** A module of the CLI, loaded when a command needs it (the worker, server and demo are slow to load). */
export function later<T>(specifier: string): T {
  return requireModule<T>(specifier, __filename);
}
