/**
 * The token-counting activity: js-tiktoken over texts the workflow has not counted yet.
 * Encoders are built once per worker process (building one parses its rank table), and
 * counts are remembered per worker by a hash of the text, so the next run of a session
 * (which starts with an empty workflow-side cache) does not tokenize its history again.
 */
import { createHash } from 'node:crypto';
import { getEncoding, type Tiktoken } from 'js-tiktoken';
import { KeelError } from '../../../core/errors';
import { TIKTOKEN_ENCODINGS, countTokensDoor, type CountTokensInput } from '../tokens';
import { implementActivity } from '../../../activities/feature-activity';

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
  return texts.map((text) => {
    const key = `${encoding}:${createHash('sha256').update(text).digest('base64')}`;
    const known = remembered.get(key);
    if (known !== undefined) {
      // Least recently used first: a hit moves to the end.
      remembered.delete(key);
      remembered.set(key, known);
      tokenizerStats.remembered++;
      return known;
    }
    // Special-token text in a conversation is counted as plain text, never rejected.
    const count = encoder.encode(text, [], []).length;
    tokenizerStats.tokenized++;
    remembered.set(key, count);
    if (remembered.size > REMEMBERED_MAX) remembered.delete(remembered.keys().next().value!);
    return count;
  });
}

/** How many counts a worker remembers (about 100 bytes each). */
const REMEMBERED_MAX = 100_000;
const remembered = new Map<string, number>();

/** Forgets every remembered count: the next count of any text tokenizes it (for the benchmark's from-scratch figure). */
export function forgetRememberedCounts(): void {
  remembered.clear();
}

/** Texts this worker tokenized, and counts it answered from memory (for tests and the benchmark). */
export const tokenizerStats = { tokenized: 0, remembered: 0 };

/** The Node half of ContextCompression: the `countTokens` local activity. */
export const contextCompressionActivities = [implementActivity(countTokensDoor, async (input) => countTokens(input))];
