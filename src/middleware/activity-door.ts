/**
 * The door a middleware reaches its own activities through. A feature declares each of its
 * activities once, in its workflow half, with `defineActivity`: the registered name, the zod
 * schemas of what goes in and comes out, and how it runs (a regular activity, or a local one
 * for short idempotent work); the middleware calls `context.activity(door, input)`, typed by
 * that declaration, and the feature's Node half implements the door (`implementActivity`,
 * keel-agents). Pure: a declaration only names things, so the workflow can hold it.
 */
import type { z } from 'zod';

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
