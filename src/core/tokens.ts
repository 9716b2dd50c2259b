/**
 * Token counting shared by the workflow (what to count) and the activity (js-tiktoken).
 * Pure: no I/O.
 */
/** The encodings js-tiktoken ships. */
export const TIKTOKEN_ENCODINGS = ['o200k_base', 'cl100k_base', 'p50k_base', 'p50k_edit', 'r50k_base', 'gpt2'] as const;
export type TiktokenEncodingName = (typeof TIKTOKEN_ENCODINGS)[number];

/** One counting request: the texts to count with one encoding. */
export interface CountTokensInput {
  encoding: TiktokenEncodingName;
  texts: string[];
}
