/**
 * How a keel worker process writes the SDK's log: as the SDK's DefaultLogger does, except for a
 * call or a run that failed with an ApplicationFailure (an outcome of the run: a tool that threw,
 * a status keel gave it), which is one line saying what failed, in which run, and the failure's
 * message (where a tool threw included), instead of the failure's stack through keel's and the
 * SDK's code and the task's metadata. At DEBUG and TRACE every entry is written whole. Node side.
 */
import { DefaultLogger, LogTimestamp, type LogEntry, type LogLevel, type LogMetadata } from '@temporalio/worker';
import { formatWithOptions } from 'node:util';

/** The SDK's messages for a failed activity attempt and a failed workflow execution. */
const ACTIVITY_FAILED = 'Activity failed';
const WORKFLOW_FAILED = 'Workflow failed';

/**
 * The failure an entry carries, when it is an ApplicationFailure (one from the workflow thread is
 * a plain Error by then: its stack still opens with the name).
 */
function applicationFailureOf(meta: LogMetadata | undefined): { type?: string; message: string } | undefined {
  const error = meta?.error as { name?: unknown; type?: unknown; message?: unknown; stack?: unknown } | undefined;
  const named = error?.name === 'ApplicationFailure' || (typeof error?.stack === 'string' && error.stack.startsWith('ApplicationFailure: '));
  if (!named || typeof error?.message !== 'string') return undefined;
  return { ...(typeof error.type === 'string' ? { type: error.type } : {}), message: error.message };
}

/** The one line for a failed call or run (naming its run, agent and turn, as every keel log line does), or undefined for any other entry. */
export function conciseLine({ level, message, meta, timestampNanos }: LogEntry): string | undefined {
  const failure = applicationFailureOf(meta);
  if (!failure || (message !== ACTIVITY_FAILED && message !== WORKFLOW_FAILED)) return undefined;
  const at = new Date(Number(timestampNanos / 1_000_000n)).toISOString();
  const said = `${failure.type ? `${failure.type}: ` : ''}${failure.message}`;
  const where = [
    meta?.agent !== undefined ? `agent ${String(meta.agent)}` : undefined,
    meta?.turn !== undefined ? `turn ${String(meta.turn)}` : undefined,
    message === ACTIVITY_FAILED ? `attempt ${String(meta?.attempt)}` : undefined,
  ].filter(Boolean);
  const run = `run ${String(meta?.workflowId)}${where.length ? ` (${where.join(', ')})` : ''}`;
  if (message === WORKFLOW_FAILED) return `${at} [${level}] ${run} failed: ${said}`;
  return `${at} [${level}] ${String(meta?.activityType)} failed in ${run}: ${said}`;
}

/**
 * The logger of a worker process at `level` (see the module comment), writing each entry's
 * line(s) with `write`: stderr unless given (the demo gives its terminal's writer, so a log line
 * goes above a question it asks, never onto it).
 */
export function workerLogger(level: LogLevel, write?: (line: string) => void): DefaultLogger {
  const whole = write ? new DefaultLogger(level, (entry) => write(wholeLine(entry))) : new DefaultLogger(level);
  if (level === 'TRACE' || level === 'DEBUG') return whole;
  const concise = write ?? ((line: string) => process.stderr.write(`${line}\n`));
  return new DefaultLogger(level, (entry) => {
    const line = conciseLine(entry);
    if (line !== undefined) concise(line);
    else whole.log(entry.level, entry.message, { ...entry.meta, [LogTimestamp]: entry.timestampNanos });
  });
}

/** An entry as the SDK's DefaultLogger writes it, without colours. */
function wholeLine({ level, message, meta, timestampNanos }: LogEntry): string {
  const at = new Date(Number(timestampNanos / 1_000_000n)).toISOString();
  return meta === undefined || Object.keys(meta).length === 0
    ? `${at} [${level}] ${message}`
    : `${at} [${level}] ${message} ${formatWithOptions({ colors: false }, meta)}`;
}
