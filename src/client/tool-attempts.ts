/**
 * Which worker runs each tool call under way, read from Temporal: a run's pending `callTool`
 * activities (describe) carry their attempt and the identity (`<pid>@<host>`) of the worker
 * that started it, and the activity's scheduled event in the run's history says which tool it
 * is (read newest first, once per call: the event is near the end). Nothing is written to the
 * run's history. Node side.
 */
import type { Payload } from '@temporalio/common';
import { decodePayload } from './decode-payload';
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** A tool call's attempt under way, and the worker running it. */
export interface ToolAttempt {
  /** The tool. */
  name: string;
  /** The model's id of the call, when the run's history shows it. */
  ref?: string;
  /** The activity id (unique within one Temporal execution of the run). */
  activityId: string;
  /** The Temporal run id of the execution that scheduled it (a run continued as new counts activity ids from 1 again). */
  temporalRunId: string;
  /** From 1; a call retried elsewhere after its worker died is the next attempt. */
  attempt: number;
  /** The worker's identity, `<pid>@<host>` for keel's workers. */
  worker: string;
}

/** What a scheduled `callTool` activity was for. */
interface ScheduledTool {
  name: string;
  ref?: string;
}

const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
/** Events per page of history read newest first, and how many pages at most (a run continues as new well before 10,000 events). */
const PAGE_SIZE = 1000;
const MAX_PAGES = 10;

/**
 * Tool names of scheduled activities, by `<temporal run id>/<activity id>`, learned from the run's
 * history; kept per handle so each call's event is looked for once.
 */
export type ToolNames = Map<string, ScheduledTool | null>;

/** The tool calls under way in a description, each with the worker running it; names are read from history when not yet known. */
export async function toolAttemptsOf(client: Client, description: WorkflowExecutionDescription, names: ToolNames): Promise<ToolAttempt[]> {
  const { runId, workflowId } = description;
  const started = (description.raw.pendingActivities ?? []).filter(
    (activity) => activity.activityType?.name === 'callTool' && activity.state === STARTED && activity.lastWorkerIdentity && activity.activityId,
  );
  const unknown = started.map((activity) => activity.activityId!).filter((id) => !names.has(`${runId}/${id}`));
  if (unknown.length) await learnToolNames(client, { workflowId, runId }, unknown, names);
  return started.map((activity) => {
    const scheduled = names.get(`${runId}/${activity.activityId}`);
    return {
      name: scheduled?.name ?? `(the tool of activity ${activity.activityId})`,
      ...(scheduled?.ref !== undefined ? { ref: scheduled.ref } : {}),
      activityId: activity.activityId!,
      temporalRunId: runId,
      attempt: activity.attempt ?? 1,
      worker: activity.lastWorkerIdentity!,
    };
  });
}

/** Reads the run's history newest first until it has seen the scheduled event of every id in `wanted`. */
async function learnToolNames(client: Client, execution: { workflowId: string; runId: string }, wanted: string[], names: ToolNames): Promise<void> {
  const missing = new Set(wanted);
  // A payload this client cannot read (stored elsewhere, another converter, a key it lacks) is undefined.
  const decode = (payload: temporal.api.common.v1.IPayload | null | undefined): Promise<unknown> => decodePayload(client, payload as Payload | undefined);
  let nextPageToken: Uint8Array | undefined;
  try {
    for (let page = 0; page < MAX_PAGES && missing.size; page++) {
      const response = await client.workflowService.getWorkflowExecutionHistoryReverse({
        namespace: client.options.namespace,
        execution,
        maximumPageSize: PAGE_SIZE,
        ...(nextPageToken ? { nextPageToken } : {}),
      });
      for (const event of response.history?.events ?? []) {
        const scheduled = event.activityTaskScheduledEventAttributes;
        const id = scheduled?.activityId;
        if (!scheduled || !id || !missing.has(id)) continue;
        missing.delete(id);
        const input = (await decode(scheduled.input?.payloads?.[0])) as { toolName?: unknown; ref?: unknown } | undefined;
        const summary = await decode(event.userMetadata?.summary);
        const name =
          typeof input?.toolName === 'string' ? input.toolName : typeof summary === 'string' && summary.startsWith('tool ') ? summary.slice(5) : undefined;
        names.set(`${execution.runId}/${id}`, name ? { name, ...(typeof input?.ref === 'string' ? { ref: input.ref } : {}) } : null);
      }
      if (!response.nextPageToken?.length) break;
      nextPageToken = response.nextPageToken;
    }
  } catch {
    // History unreadable now (the server restarting): try again on the next look.
    return;
  }
  for (const id of missing) names.set(`${execution.runId}/${id}`, null);
}
