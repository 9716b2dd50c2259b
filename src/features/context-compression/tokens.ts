/**
 * Token counting shared by the workflow (what to count) and the activity (js-tiktoken): the
 * encodings, and the `countTokens` activity's door. Pure: no I/O.
 */
import { z } from 'zod';
import { defineActivity } from '../../middleware/activity-door';

/** The encodings js-tiktoken ships. */
export const TIKTOKEN_ENCODINGS = ['o200k_base', 'cl100k_base', 'p50k_base', 'p50k_edit', 'r50k_base', 'gpt2'] as const;
export type TiktokenEncodingName = (typeof TIKTOKEN_ENCODINGS)[number];

/** One counting request: the texts to count with one encoding. */
export const CountTokensInputSchema = z.object({ encoding: z.enum(TIKTOKEN_ENCODINGS), texts: z.array(z.string()) });
export type CountTokensInput = z.infer<typeof CountTokensInputSchema>;

/** The `countTokens` local activity: js-tiktoken counts of texts, one per text (ContextCompression's `tokenizer: 'tiktoken'`). */
export const countTokensDoor = defineActivity({
  name: 'countTokens',
  input: CountTokensInputSchema,
  output: z.array(z.number().int()),
  kind: 'local',
  describe: (input) => `counting tokens of ${input.texts.length} texts`,
});
