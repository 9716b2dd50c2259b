/**
 * One programmed reply of the `scripted` provider (src/models/scripted.ts), as data: the shape
 * temporal.yaml's scripted models and the provider share. Pure.
 */
import { z } from 'zod';
import { FinishReasonSchema } from './messages';
import { StatusNameSchema } from './status';

/** One programmed reply. */
export const ScriptedReplySchema = z
  .object({
    text: z.string().optional(),
    /** A structured answer (for a request with an output schema): sent as its JSON text. */
    object: z.unknown().optional(),
    /** The text streamed in these pieces, `chunkDelayMs` apart (the reply's text, unless `text` says otherwise). */
    stream: z.array(z.string()).optional(),
    chunkDelayMs: z.number().int().min(0).optional(),
    toolRequests: z.array(z.object({ name: z.string().min(1), ref: z.string().optional(), input: z.unknown().default({}) }).strict()).optional(),
    /**
     * The usage the reply reports, as given: the model activity checks it as it checks every
     * provider's, so a script can play a provider that reports usage keel cannot count.
     */
    usage: z.record(z.string(), z.unknown()).optional(),
    finishReason: FinishReasonSchema.optional(),
    delayMs: z.number().int().min(0).optional(),
    /** A failure: with a status it is classified; without one it is a plain (unclassified) error. */
    error: z
      .object({ status: StatusNameSchema.optional(), message: z.string().default('scripted failure'), retryAfterMs: z.number().int().min(0).optional() })
      .strict()
      .optional(),
  })
  .strict();
export type ScriptedReply = z.input<typeof ScriptedReplySchema>;
