/**
 * The workflow side of a feature's activity door (src/middleware/activity-door.ts): a call
 * scheduled under the door's name, as a regular or a local activity, with the timeouts and
 * retries of the agent's `activities.tool`; a failure comes back as a KeelError naming the call.
 * Runs in the workflow: no I/O.
 */
import type { z } from 'zod';
import type { ActivitySpec } from '../core/run';
import type { ActivityDoor } from '../middleware/activity-door';
import { KeelError } from '../core/errors';
import { activityOptions, asKeelError } from './activity-errors';
import { proxyDoor } from './activities';

/** Timeouts and retries of a door's activity (its own, or one call's). */
export type DoorOptions = NonNullable<ActivityDoor['options']>;

/** Calls a declared activity, with options of this call's own if given: `MiddlewareContext.activity` is this without them. */
export type DoorCall = <Input extends z.ZodType, Output extends z.ZodType>(
  door: ActivityDoor<Input, Output>,
  input: z.input<Input>,
  options?: DoorOptions,
) => Promise<z.output<Output>>;

/**
 * `MiddlewareContext.activity` for a run whose activities follow `spec` (a door with options of
 * its own follows them instead, and a call given options follows those; without `spec`, every
 * door or call must have them).
 */
export function featureActivityCaller(spec?: ActivitySpec): DoorCall {
  return async (door, input, given) => {
    const summary = door.describe(input);
    const options = given ?? door.options ?? (spec ? activityOptions(spec) : undefined);
    if (!options) throw new KeelError('INTERNAL', `activity "${door.name}" declares no options and the run has no activity spec yet`);
    const { startToCloseTimeout, scheduleToCloseTimeout, retry } = options;
    // A local activity takes no heartbeat timeout (its workflow task is its liveness).
    const call = proxyDoor(
      door,
      door.kind === 'local' ? { local: true, startToCloseTimeout, scheduleToCloseTimeout, retry, summary } : { ...options, summary },
    );
    try {
      return await call(input);
    } catch (error) {
      throw asKeelError(error, summary);
    }
  };
}
