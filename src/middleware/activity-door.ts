/**
 * The door a middleware reaches its own activities through. A feature declares each of its
 * activities once, in its workflow half, with `defineActivity`: the registered name, the zod
 * schemas of what goes in and comes out, and how it runs (a regular activity, or a local one
 * for short idempotent work); the middleware calls `context.activity(door, input)`, typed by
 * that declaration, and the feature's Node half implements the door (`implementActivity`,
 * src/activities/feature-activity.ts). Pure: the workflow can hold a declaration.
 */
import type { ActivityOptions } from '@temporalio/workflow';
import type { z } from 'zod';
import { KeelError } from '../core/errors';
import { describeZodError } from '../core/schema-errors';

/** One activity of a feature, as its workflow half declares it. */
export interface ActivityDoor<Input extends z.ZodType = z.ZodType, Output extends z.ZodType = z.ZodType> {
  /** The activity type the worker registers and a run's history records: keep it stable. */
  name: string;
  /** What the activity takes; the worker parses each call's input with it before the activity runs. */
  input: Input;
  /** What the activity answers; the worker parses the answer with it before it leaves. */
  output: Output;
  /**
   * `regular` (default): scheduled through the server, timeouts and retries from the agent's
   * `activities.tool`; `local`: runs on the worker that runs the workflow (short, idempotent work).
   */
  kind?: 'regular' | 'local';
  /**
   * Timeouts and retries of its own, for an activity whose policy is not the tool's (a read
   * that keeps asking while another run's worker restarts); default: the agent's `activities.tool`.
   */
  options?: Pick<ActivityOptions, 'startToCloseTimeout' | 'scheduleToCloseTimeout' | 'heartbeatTimeout' | 'retry'>;
  /** What a call does, in a few words: its summary in Temporal's UI and the subject of its errors (`file operation read`). */
  describe: (input: z.input<Input>) => string;
}

/** Declares an activity of a feature: `export const filesDoor = defineActivity({ name: 'files', input, output, describe })`. */
export function defineActivity<Input extends z.ZodType, Output extends z.ZodType>(door: ActivityDoor<Input, Output>): ActivityDoor<Input, Output> {
  return door;
}

/** Calls a declared activity: what `MiddlewareContext.activity` is. */
export type ActivityCall = <Input extends z.ZodType, Output extends z.ZodType>(
  door: ActivityDoor<Input, Output>,
  input: z.input<Input>,
) => Promise<z.output<Output>>;

/**
 * Runs `work` as a door's implementation runs (on a worker, or in the middleware harness): the
 * input parsed with the door's input schema first, the answer with its output schema after; either
 * failing is a KeelError naming the activity.
 */
export async function throughDoor<Input extends z.ZodType, Output extends z.ZodType>(
  door: ActivityDoor<Input, Output>,
  input: unknown,
  work: (input: z.output<Input>) => Promise<unknown>,
): Promise<z.output<Output>> {
  const parsed = door.input.safeParse(input);
  if (!parsed.success) throw new KeelError('INVALID_ARGUMENT', `activity "${door.name}": invalid input: ${describeZodError(parsed.error)}`);
  const answer = door.output.safeParse(await work(parsed.data));
  if (!answer.success) throw new KeelError('INTERNAL', `activity "${door.name}" answered what its door does not declare: ${describeZodError(answer.error)}`);
  return answer.data;
}

/** A door's activity as a workflow proxies it itself (`proxyActivities<{ name: DoorFunction<typeof door> }>`), for a call with options of its own per call. */
export type DoorFunction<Door> = Door extends ActivityDoor<infer Input, infer Output> ? (input: z.input<Input>) => Promise<z.output<Output>> : never;
