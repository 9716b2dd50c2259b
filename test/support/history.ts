/** Reads a run's Temporal history: which activities it scheduled, how big it is. */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { BOUNDARY_TIMER_SUMMARY } from '../../src/workflows/generate';

const EventType = temporal.api.enums.v1.EventType;

/** Activity types of every ActivityTaskScheduled event, in order. */
export async function scheduledActivities(client: Client, runId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(runId).fetchHistory();
  return (history.events ?? [])
    .filter((event) => event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    .map((event) => event.activityTaskScheduledEventAttributes?.activityType?.name ?? '?');
}

/** Local activity markers (resolveAgent) recorded in the history; patch markers are not counted. */
export async function markerCount(client: Client, runId: string): Promise<number> {
  const history = await client.workflow.getHandle(runId).fetchHistory();
  return (history.events ?? []).filter((event) => event.eventType === EventType.EVENT_TYPE_MARKER_RECORDED && event.markerRecordedEventAttributes?.markerName !== 'core_patch').length;
}

type HistoryEvent = NonNullable<temporal.api.history.v1.IHistory['events']>[number];

/** True for the 1 ms timer keel starts between resolving the agent and setting up middleware. */
export function isBoundaryTimer(event: HistoryEvent): boolean {
  const summary = event.userMetadata?.summary?.data;
  return summary !== undefined && summary !== null && Buffer.from(summary).toString().includes(BOUNDARY_TIMER_SUMMARY);
}

/** Timer-started events of a history, without keel's task-boundary timer. */
export function middlewareTimers(events: readonly HistoryEvent[]): HistoryEvent[] {
  return events.filter((event) => event.eventType === EventType.EVENT_TYPE_TIMER_STARTED && !isBoundaryTimer(event));
}

