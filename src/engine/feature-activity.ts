/**
 * The workflow side of a feature's activity door (src/middleware/activity-door.ts): a call
 * scheduled under the door's name, as a regular or a local activity, with the timeouts and
 * retries of the agent's `activities.tool`; a failure comes back as a KeelError naming the call.
 * Runs in the workflow: no I/O.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { ActivitySpec } from '../core/run';
import type { ActivityCall } from '../middleware/activity-door';
import { KeelError } from '../core/errors';
import { activityOptions, asKeelError } from './activity-errors';

/** A feature activity as the workflow proxies it: any door's input in, its answer out (typed by the door: the worker parsed it with the door's output schema). */
type DoorActivities = Record<string, (input: unknown) => Promise<never>>;

/**
 * `MiddlewareContext.activity` for a run whose activities follow `spec` (a door with options of
 * its own follows them instead; without `spec`, every door must have them).
 */
export function featureActivityCaller(spec?: ActivitySpec): ActivityCall {
  return async (door, input) => {
    const summary = door.describe(input);
    const options = door.options ?? (spec ? activityOptions(spec) : undefined);
    if (!options) throw new KeelError('INTERNAL', `activity "${door.name}" declares no options and the run has no activity spec yet`);
    const { startToCloseTimeout, scheduleToCloseTimeout, retry } = options;
    const activities =
      door.kind === 'local'
        ? proxyLocalActivities<DoorActivities>({ startToCloseTimeout, scheduleToCloseTimeout, retry, summary })
        : proxyActivities<DoorActivities>({ ...options, summary });
    try {
      return await activities[door.name]!(input);
    } catch (error) {
      throw asKeelError(error, summary);
    }
  };
}
