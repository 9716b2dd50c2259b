/**
 * Steering a running run: a user message sent to a run under way (the `steer` update), taken
 * at its next model call, and the record of it that `status.steering` shows. Pure: safe in
 * workflow code.
 */
import { z } from 'zod';
import { describeZodError } from './schema-errors';
import { describeUndecodable, isUndecodable } from './undecodable';

/** The most characters one steering message may have. */
export const MAX_STEER_CHARS = 100_000;

/** What a `steer` update carries: the message's text, and whether the model call in flight is cancelled for it. */
export const SteerInputSchema = z
  .object({
    /** The user message, added to the conversation before the run's next model call. */
    text: z
      .string()
      .min(1, { error: 'must not be empty', abort: true })
      .max(MAX_STEER_CHARS, { error: `must be at most ${MAX_STEER_CHARS} characters`, abort: true })
      .refine((text) => text.trim().length > 0, 'must not be empty'),
    /**
     * Cancel the model call in flight, if any, and call the model again at once with the message
     * added (its partial text is discarded). Tool calls in flight are never cancelled: with one
     * running, the message waits for the next model call as without `interrupt`.
     */
    interrupt: z.boolean().optional(),
  })
  .strict();
export type SteerInput = z.infer<typeof SteerInputSchema>;

/** Where a steering message stands: waiting for the next model call, taken by one, or dropped (the run ended first). */
export const SteerStateSchema = z.enum(['pending', 'applied', 'dropped']);
export type SteerState = z.infer<typeof SteerStateSchema>;

/** A steering message a run accepted, as `status.steering` lists it and the update answers it. */
export const SteerRecordSchema = z.object({
  /** The update id it was sent with: sent again with the same id, it is not added again. */
  id: z.string(),
  text: z.string(),
  state: SteerStateSchema,
  /** Sent with `interrupt`. */
  interrupt: z.boolean().optional(),
  /** When the run accepted it (ISO time, workflow clock). */
  at: z.string(),
  /** The turn whose model call took it (state `applied`). */
  turn: z.number().int().optional(),
  /** When that model call was made. */
  appliedAt: z.string().optional(),
  /** Set when it cancelled a model call in flight (`interrupt`): that call's partial answer was discarded and its usage is not known. */
  cancelledModelCall: z.boolean().optional(),
  /** Why it was dropped (state `dropped`). */
  reason: z.string().optional(),
});
export type SteerRecord = z.infer<typeof SteerRecordSchema>;

/** How many steering records `status.steering` keeps (the latest). */
export const KEPT_STEERS = 100;

/** The metadata key a steering message carries in the conversation: its update id. */
export const STEER_METADATA_KEY = 'keelSteer';

/** What is wrong with a steer's input (naming the field), or undefined when it is well formed. */
export function steerInputProblem(raw: unknown): string | undefined {
  if (isUndecodable(raw)) return `invalid steer: ${describeUndecodable(raw)}`;
  const parsed = SteerInputSchema.safeParse(raw);
  return parsed.success ? undefined : `invalid steer: ${describeZodError(parsed.error)}`;
}
