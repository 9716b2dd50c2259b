/**
 * The token-counting activity: js-tiktoken over texts the workflow has not counted yet.
 * Encoders are built once per worker process (building one parses its rank table).
 */
import { getEncoding, type Tiktoken } from 'js-tiktoken';
import { KeelError } from '../core/errors';
import { TIKTOKEN_ENCODINGS, type CountTokensInput } from '../core/tokens';

const encoders = new Map<string, Tiktoken>();

/** The number of tokens of each text. */
export function countTokens({ encoding, texts }: CountTokensInput): number[] {
  if (!(TIKTOKEN_ENCODINGS as readonly string[]).includes(encoding)) {
    throw new KeelError('INVALID_ARGUMENT', `unknown tiktoken encoding "${encoding}"; known: ${TIKTOKEN_ENCODINGS.join(', ')}`);
  }
  let encoder = encoders.get(encoding);
  if (!encoder) {
    encoder = getEncoding(encoding);
    encoders.set(encoding, encoder);
  }
  // Special-token text in a conversation is counted as plain text, never rejected.
  return texts.map((text) => encoder.encode(text, [], []).length);
}
