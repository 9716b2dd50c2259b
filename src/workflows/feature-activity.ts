/**
 * The workflow side of a feature's activity door (src/middleware/activity-door.ts): a call
 * scheduled under the door's name, as a regular or a local activity, with the timeouts and
 * retries of the agent's `activities.tool`; a failure comes back as a KeelError naming the call.
 * Runs in the workflow: no I/O.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { ActivitySpec } from '../core/run';
import type { ActivityCall } from '../middleware/activity-door';
import { activityOptions, asKeelError, localActivityOptions } from './activity-errors';

/** A feature activity as the workflow proxies it: any door's input in, its answer out. */
type DoorActivities = Record<string, (input: unknown) => Promise<never>>;

/** `MiddlewareContext.activity` for a run whose activities follow `spec`. */
export function featureActivityCaller(spec: ActivitySpec): ActivityCall {
  return async (door, input) => {
    const summary = door.describe(input);
    const activities =
      door.kind === 'local'
        ? proxyLocalActivities<DoorActivities>({ ...localActivityOptions(spec), summary })
        : proxyActivities<DoorActivities>({ ...activityOptions(spec), summary });
    try {
      return await activities[door.name]!(input);
    } catch (error) {
      throw asKeelError(error, summary);
    }
  };
}
