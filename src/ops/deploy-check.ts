/**
 * `keel deploy check`: before a rollout, replays recent runs of every agent, fetched from the
 * server (open and closed, a bounded number per agent), against the workflow code in hand
 * (keel's loop plus the config's middleware modules, bundled as `keel worker` bundles them).
 * A run whose history the new code would not replay is reported with its run id and the
 * first event it diverges at. It also says where a rate-limited model's queue has another
 * per-tenant limit than the config (docs/tenants.md). Node side.
 */
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { DefaultLogger, Runtime, Worker, makeTelemetryFilterString } from '@temporalio/worker';
import { resolve } from 'node:path';
import type { KeelConfig } from '../config/schema';
import { KEEL_AGENT, queryString } from '../core/search-attributes';
import { listExecutions } from '../node/list-executions';
import { keelDataConverter } from '../storage/data-converter';
import { workflowBundlePath } from '../worker/bundle';
import { readFairnessLimits, type FairnessLimit } from './fairness-limits';

/** Options of `checkDeploy`. */
export interface DeployCheckOptions {
  /** Most runs replayed per agent, newest first (default 10). */
  perAgent?: number;
  /** Most runs looked at in all, newest first (default 500). */
  scan?: number;
  /** Only runs of this agent. */
  agent?: string;
  /** A prebuilt workflow bundle to replay against, instead of building one from the config. */
  bundlePath?: string;
}

/** One run that does not replay against the code in hand. */
export interface DeployCheckFailure {
  runId: string;
  temporalRunId: string;
  agent: string;
  /** The first event the new code disagrees with, when the replayer named it. */
  event?: { id: number; type: string };
  message: string;
}

/** What `keel deploy check` found. */
export interface DeployCheckReport {
  /** Runs replayed, per agent. */
  checked: Record<string, number>;
  failures: DeployCheckFailure[];
  /** Rate-limited models whose queue's per-tenant limit is not the config's (`keel namespace setup` writes it); absent when all agree. */
  limitsOff?: FairnessLimit[];
}

const WORKFLOW_TYPES = ['generateWorkflow', 'sessionWorkflow'];

/**
 * Installs the SDK runtime for a check: the replayer's own warnings about the runs that do not
 * replay (which the check reports itself) stay quiet, errors go to stderr, stdout stays the report's.
 */
export function installCheckRuntime(): void {
  Runtime.install({
    logger: new DefaultLogger('ERROR', (entry) => process.stderr.write(`${entry.level} ${entry.message}\n`)),
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR', other: 'ERROR' }) } },
  });
}

/** The event type's name without its prefix (`ActivityTaskScheduled`). */
function eventTypeName(event: temporal.api.history.v1.IHistoryEvent | undefined): string {
  const attributes = Object.keys(event ?? {}).find((key) => key.endsWith('EventAttributes') && (event as Record<string, unknown>)[key]);
  return attributes ? attributes.replace(/EventAttributes$/, '').replace(/^./, (first) => first.toUpperCase()) : 'unknown';
}

/** The id of the event a nondeterminism message names (core says `event 5`, `HistoryEvent(id: 5`, or `event id 5`). */
function divergingEventId(message: string): number | undefined {
  const found = /HistoryEvent\(id: (\d+)|event(?: id)?:? '?(\d+)/i.exec(message);
  return found ? Number(found[1] ?? found[2]) : undefined;
}

/**
 * Replays recent runs of every agent against the code `config` describes; resolves with
 * what was checked and each run that does not replay (none: the rollout is safe for the runs
 * looked at).
 */
export async function checkDeploy(
  client: Client,
  config: KeelConfig,
  { perAgent = 10, scan = 500, agent, bundlePath }: DeployCheckOptions = {},
): Promise<DeployCheckReport> {
  const types = WORKFLOW_TYPES.map((type) => `'${type}'`).join(', ');
  const query = `WorkflowType IN (${types}) AND TaskQueue = ${queryString(config.taskQueue)}${agent ? ` AND ${KEEL_AGENT.name} = ${queryString(agent)}` : ''}`;
  const chosen: Array<{ workflowId: string; runId: string; agent: string }> = [];
  const checked: Record<string, number> = {};
  let seen = 0;
  for await (const run of listExecutions(client, { query, pageSize: 100 })) {
    if (++seen > scan) break;
    const name = run.typedSearchAttributes.get(KEEL_AGENT) ?? (run.memo?.agent as string | undefined) ?? '(unknown agent)';
    if ((checked[name] ?? 0) >= perAgent) continue;
    checked[name] = (checked[name] ?? 0) + 1;
    chosen.push({ workflowId: run.workflowId, runId: run.runId, agent: name });
  }
  const codePath = bundlePath ?? (await workflowBundlePath({ middlewareModules: config.middlewareModules.map((module) => resolve(config.baseDir, module)) }));
  const dataConverter = await keelDataConverter(config, { forWorkflows: true });
  const failures: DeployCheckFailure[] = [];
  for (const run of chosen) {
    const history = await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    try {
      await Worker.runReplayHistory({ workflowBundle: { codePath }, ...(dataConverter ? { dataConverter } : {}) }, history, run.workflowId);
    } catch (error) {
      const message = (error as Error).message;
      const id = divergingEventId(message);
      const event = id === undefined ? undefined : history.events?.find((candidate) => Number(candidate.eventId) === id);
      failures.push({
        runId: run.workflowId,
        temporalRunId: run.runId,
        agent: run.agent,
        ...(id !== undefined ? { event: { id, type: eventTypeName(event) } } : {}),
        message,
      });
    }
  }
  const limitsOff = (await readFairnessLimits(client.connection, config)).filter(({ perTenant, was }) => perTenant !== was);
  return { checked, failures, ...(limitsOff.length ? { limitsOff } : {}) };
}
