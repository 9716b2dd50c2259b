/**
 * `keel namespace setup`: readies a Temporal cluster's namespace for keel, through the
 * frontend's workflow and operator APIs with the config's connection (address, TLS, API key).
 * It registers `temporal.namespace` when missing (with a retention), then keel's search
 * attributes (`KEEL_SEARCH_ATTRIBUTES`, the list the dev server is started with), then the
 * per-tenant limits of the rate-limited models' queues (./fairness-limits.ts). Idempotent: a
 * namespace or attribute that exists is reported as such, never changed; a queue's limit is made
 * what the config says. Node side.
 */
import { Connection, isGrpcServiceError } from '@temporalio/client';
import { msToTs, tsToMs } from '@temporalio/common/lib/time';
import { durationMs } from '../core/duration';
import { temporal } from '@temporalio/proto';
import { ConfigError } from '../config/load';
import type { KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import { KEEL_SEARCH_ATTRIBUTES } from '../core/search-attributes';
import { STATUS_NAMES } from '../core/status';
import { describeLimit, writeFairnessLimits, type FairnessLimit } from './fairness-limits';
import { acceptsConnections } from '../node/ports';
import { connectionOptions, tlsMismatch } from '../worker/connect';
import { tlsRefusal } from '../worker/tls-refusal';

/** The retention a namespace is registered with when `--retention` is not given (the temporal CLI's default too). */
export const DEFAULT_RETENTION = '3 days';

const KEYWORD = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;

/** What `setUpNamespace` found and did. */
export interface NamespaceSetupReport {
  address: string;
  /** `retention`: the namespace's; `retentionNotApplied`: a retention asked for that an existing namespace was left without. */
  namespace: { name: string; created: boolean; retention: string; retentionNotApplied?: string };
  searchAttributes: Array<{ name: string; type: 'Keyword'; created: boolean }>;
  /** Each rate-limited model's per-tenant limit on its queue (absent: the config has no rate-limited model). */
  fairnessLimits?: FairnessLimit[];
}

/** Options of `setUpNamespace`. */
export interface NamespaceSetupOptions {
  connection: Connection;
  /** Where `connection` goes, for the report and messages. */
  address: string;
  namespace: string;
  /** Retention of a namespace this call registers; an existing namespace keeps its own. */
  retentionMs: number;
  /** True when `retentionMs` was asked for (not the default): an existing namespace with another is reported. */
  retentionAsked?: boolean;
  /** How long to keep asking while a namespace just registered is not yet known to the frontend (its cache refreshes every 10 s). */
  settleTimeoutMs?: number;
}

/** Why `text` is not a retention `--retention` accepts, or undefined when it is one. */
export function retentionProblem(text: string): string | undefined {
  const ms = durationMs(text);
  if (ms === undefined || ms <= 0) return `--retention: a duration such as "3 days" or "72h", not "${text}"`;
  return undefined;
}

/** A retention for a person: whole days or hours when it is one. */
export function describeRetention(ms: number): string {
  const hour = 3_600_000;
  const plural = (count: number, unit: string) => `${count} ${unit}${count === 1 ? '' : 's'}`;
  if (ms % (24 * hour) === 0) return plural(ms / (24 * hour), 'day');
  if (ms % hour === 0) return plural(ms / hour, 'hour');
  return plural(Math.round(ms / 1000), 'second');
}

/** A gRPC failure as a KeelError with the same status (keel's status names are gRPC's codes, in order). */
function asKeelError(error: unknown, doing: string): KeelError {
  if (isGrpcServiceError(error)) {
    const status = STATUS_NAMES[error.code] ?? 'UNKNOWN';
    return new KeelError(status, `${doing}: ${error.details || error.message}`);
  }
  return new KeelError('UNKNOWN', `${doing}: ${(error as Error).message}`);
}

/** A search attribute type as the temporal CLI spells it: `Text`, `KeywordList`. */
function typeName(type: temporal.api.enums.v1.IndexedValueType): string {
  const name = temporal.api.enums.v1.IndexedValueType[type] ?? String(type);
  return name
    .replace(/^INDEXED_VALUE_TYPE_/, '')
    .toLowerCase()
    .replace(/(^|_)([a-z])/g, (_match, _separator: string, letter: string) => letter.toUpperCase());
}

const isCode = (error: unknown, code: number) => isGrpcServiceError(error) && (error.code as number) === code;
const NOT_FOUND = 5;
const ALREADY_EXISTS = 6;

/** Runs `work`, again while it fails with NOT_FOUND (a namespace the frontend does not know yet), up to `timeoutMs`. */
async function whileNotFound<T>(timeoutMs: number, work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await work();
    } catch (error) {
      if (!isCode(error, NOT_FOUND) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** Registers the namespace when missing, then keel's search attributes in it; reports what existed and what it made. */
export async function setUpNamespace({
  connection,
  address,
  namespace,
  retentionMs,
  retentionAsked = false,
  settleTimeoutMs = 30_000,
}: NamespaceSetupOptions): Promise<NamespaceSetupReport> {
  let created = false;
  let retention = retentionMs;
  try {
    const described = await connection.workflowService.describeNamespace({ namespace });
    retention = tsToMs(described.config?.workflowExecutionRetentionTtl);
  } catch (error) {
    if (!isCode(error, NOT_FOUND)) throw asKeelError(error, `describing namespace "${namespace}" at ${address}`);
    try {
      await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(retentionMs) });
      created = true;
    } catch (registering) {
      // Registered by someone else since the describe: it exists, with their retention.
      if (!isCode(registering, ALREADY_EXISTS)) throw asKeelError(registering, `registering namespace "${namespace}" at ${address}`);
      const described = await connection.workflowService.describeNamespace({ namespace });
      retention = tsToMs(described.config?.workflowExecutionRetentionTtl);
    }
  }

  const listed = async () =>
    (await whileNotFound(settleTimeoutMs, () => connection.operatorService.listSearchAttributes({ namespace }))).customAttributes ?? {};
  let existing: Record<string, temporal.api.enums.v1.IndexedValueType>;
  try {
    existing = await listed();
  } catch (error) {
    throw asKeelError(error, `listing the search attributes of namespace "${namespace}" at ${address}`);
  }
  const clashing = KEEL_SEARCH_ATTRIBUTES.filter((name) => existing[name] !== undefined && existing[name] !== KEYWORD);
  if (clashing.length) {
    const types = clashing.map((name) => `${name} as ${typeName(existing[name]!)}`).join(', ');
    const them = clashing.length === 1 ? 'it' : 'them';
    throw new KeelError(
      'FAILED_PRECONDITION',
      `namespace "${namespace}" at ${address} has ${types}; keel needs ${them} as Keyword: remove ${them} (temporal operator search-attribute remove) and run keel namespace setup again`,
    );
  }
  const missing = KEEL_SEARCH_ATTRIBUTES.filter((name) => existing[name] === undefined);
  if (missing.length) {
    try {
      await whileNotFound(settleTimeoutMs, () =>
        connection.operatorService.addSearchAttributes({ namespace, searchAttributes: Object.fromEntries(missing.map((name) => [name, KEYWORD])) }),
      );
    } catch (error) {
      // Added by someone else in the meantime: fine when they are Keyword (checked below).
      if (!isCode(error, ALREADY_EXISTS))
        throw asKeelError(error, `registering the search attributes ${missing.join(', ')} in namespace "${namespace}" at ${address}`);
    }
    // Registration is done once the namespace lists them (as Keyword).
    const deadline = Date.now() + settleTimeoutMs;
    for (;;) {
      const now = await listed().catch((error: unknown) => {
        throw asKeelError(error, `listing the search attributes of namespace "${namespace}" at ${address}`);
      });
      if (missing.every((name) => now[name] === KEYWORD)) break;
      if (Date.now() > deadline)
        throw new KeelError(
          'DEADLINE_EXCEEDED',
          `namespace "${namespace}" at ${address} does not list ${missing.join(', ')} as Keyword ${settleTimeoutMs / 1000} s after they were added`,
        );
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  return {
    address,
    namespace: {
      name: namespace,
      created,
      retention: describeRetention(retention),
      ...(retentionAsked && retention !== retentionMs ? { retentionNotApplied: describeRetention(retentionMs) } : {}),
    },
    searchAttributes: KEEL_SEARCH_ATTRIBUTES.map((name) => ({ name, type: 'Keyword' as const, created: missing.includes(name) })),
  };
}

/** Connects to the config's Temporal as an operator (no namespace involved); failures name the address and the cause. */
async function connectOperator(config: KeelConfig): Promise<Connection> {
  const address = config.temporal.address!;
  // A TLS file that cannot be read is a ConfigError naming the field and the file (exit 2).
  const options = connectionOptions(config);
  if (!(await acceptsConnections(address, 5000)))
    throw new KeelError('UNAVAILABLE', `cannot reach Temporal at ${address}: nothing accepts connections there (temporal.address, or TEMPORAL_ADDRESS)`);
  // The gRPC client says only "Failed to connect before the deadline" (10 s on) when TLS is on one side
  // only or a certificate is refused; probes of our own, at the same time, name the cause as soon as it shows.
  const connecting = Connection.connect({ ...options, connectTimeout: 10_000 });
  const never = new Promise<never>(() => undefined);
  const mismatched = tlsMismatch(config);
  const refused = config.temporal.tls === false ? Promise.resolve(undefined) : tlsRefusal(config);
  const first = await Promise.race([
    connecting.then(
      (connection) => ({ connection }),
      (error: unknown) => ({ error }),
    ),
    mismatched.then((mismatch) => (mismatch ? { mismatch } : never)),
    refused.then((reason) => (reason ? { reason } : never)),
  ]);
  if ('connection' in first) return first.connection;
  if (!('error' in first)) void connecting.then((connection) => connection.close()).catch(() => undefined);
  // TLS on one side only is a config error (exit 2); a certificate either side refuses is named with the field to fix.
  const mismatch = 'mismatch' in first ? first.mismatch : await mismatched;
  if (mismatch) throw mismatch;
  const reason = 'reason' in first ? first.reason : await refused;
  if (reason) throw new KeelError('UNAVAILABLE', `cannot connect to Temporal: ${reason}`);
  throw new KeelError('UNAVAILABLE', `cannot reach Temporal at ${address}: ${(first as { error: Error }).error.message}`);
}

/** The command: sets up `temporal.namespace` and prints what it found and did (one JSON object with `json`). */
export async function runNamespaceSetup(config: KeelConfig, { retention: asked, json = false }: { retention?: string; json?: boolean } = {}): Promise<number> {
  const retention = asked ?? DEFAULT_RETENTION;
  const problem = retentionProblem(retention);
  if (problem) throw new ConfigError(problem);
  const connection = await connectOperator(config);
  try {
    const report = await setUpNamespace({
      connection,
      address: config.temporal.address!,
      namespace: config.temporal.namespace,
      retentionMs: durationMs(retention)!,
      retentionAsked: asked !== undefined,
    });
    const limits = await writeFairnessLimits(connection, config).catch((error: unknown) => {
      throw asKeelError(error, `writing the per-tenant limits of the rate-limited models' queues in namespace "${config.temporal.namespace}"`);
    });
    if (limits.length) report.fairnessLimits = limits;
    if (json) process.stdout.write(`${JSON.stringify(report)}\n`);
    else process.stdout.write(`${reportLines(report).join('\n')}\n`);
    return 0;
  } finally {
    await connection.close();
  }
}

/** The report for a person, one line per thing set up. */
export function reportLines({ address, namespace, searchAttributes, fairnessLimits = [] }: NamespaceSetupReport): string[] {
  return [
    `keel namespace setup: namespace "${namespace.name}" at ${address}: ${namespace.created ? 'registered' : 'already registered'}, retention ${namespace.retention}${
      namespace.retentionNotApplied
        ? ` (kept: --retention ${namespace.retentionNotApplied} applies to a namespace this command registers; to change it: temporal operator namespace update --namespace ${namespace.name} --retention <duration>)`
        : ''
    }`,
    ...searchAttributes.map(
      ({ name, type, created }) => `keel namespace setup: search attribute ${name} (${type}): ${created ? 'registered' : 'already registered'}`,
    ),
    ...fairnessLimits.map(
      ({ model, taskQueue, perTenant, was }) =>
        `keel namespace setup: model ${model} (task queue ${taskQueue}): per-tenant limit ${describeLimit(perTenant)}${perTenant === was ? ', already set' : `, set (was ${describeLimit(was)})`}`,
    ),
  ];
}
