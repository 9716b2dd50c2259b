/** Reads a run's Temporal history: which activities it scheduled, how big it is. */
import type { Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';

const EventType = temporal.api.enums.v1.EventType;

/** Activity types of every ActivityTaskScheduled event, in order, without the run's agent lookup (`resolveAgent`). */
export async function scheduledActivities(client: Client, runId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(runId).fetchHistory();
  return (history.events ?? [])
    .filter((event) => event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    .map((event) => event.activityTaskScheduledEventAttributes?.activityType?.name ?? '?')
    .filter((type) => type !== 'resolveAgent');
}

/** Local activity markers (resolveAgent) recorded in the history; patch markers are not counted. */
export async function markerCount(client: Client, runId: string): Promise<number> {
  const history = await client.workflow.getHandle(runId).fetchHistory();
  return (history.events ?? []).filter(
    (event) => event.eventType === EventType.EVENT_TYPE_MARKER_RECORDED && event.markerRecordedEventAttributes?.markerName !== 'core_patch',
  ).length;
}

/**
 * `temporal workflow reset` of a run to its first workflow task (before anything it did),
 * with what the server re-applies by default (signals and updates); resolves to the new run id.
 */
export async function resetToFirstTask(client: Client, namespace: string, workflowId: string): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const firstTask = history.events?.find((event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  if (!firstTask?.eventId) throw new Error(`run ${workflowId} has no completed workflow task to reset to`);
  const { runId } = await client.workflowService.resetWorkflowExecution({
    namespace,
    workflowExecution: { workflowId },
    workflowTaskFinishEventId: firstTask.eventId,
    requestId: randomUUID(),
    reason: 'reset to before the run decided anything',
  });
  return runId;
}
