/**
 * Tokenizer counts of a conversation, cached per message: each message's text is counted
 * once (by the token-counting activity), keyed by a hash of its content, so a turn only
 * counts what is new since the last. Pure apart from the `count` it is given; runs in the
 * workflow.
 */
import type { Message } from '../../core/messages';
import type { CountTokensInput, TiktokenEncodingName } from './tokens';
import { CHARS_PER_TOKEN, INLINE_MEDIA_CHARS, outputText } from './view';

/** The text of a message a tokenizer counts, and the estimated tokens of its media. */
export function tokenizable(message: Message): { text: string; media: number } {
  let media = 0;
  const mediaTokens = (url: string) => Math.ceil((url.startsWith('data:') ? INLINE_MEDIA_CHARS : [...url].length) / CHARS_PER_TOKEN);
  const pieces = message.content.map((part) => {
    if ('text' in part) return part.text;
    if ('media' in part) {
      media += mediaTokens(part.media.url);
      return '';
    }
    if ('toolRequest' in part) return `${part.toolRequest.name}(${JSON.stringify(part.toolRequest.input ?? null)})`;
    if ('toolResponse' in part) {
      const content = (part.toolResponse.content ?? []).map((item) => {
        if (typeof item.text === 'string') return item.text;
        const url = (item.media as { url?: string } | undefined)?.url;
        if (url !== undefined) {
          media += mediaTokens(url);
          return '';
        }
        return JSON.stringify(item.data ?? item);
      });
      return [`${part.toolResponse.name}: ${outputText(part.toolResponse.output)}`, ...content].join('\n');
    }
    return JSON.stringify(part.custom);
  });
  return { text: `${message.role}: ${pieces.join('\n')}`, media };
}

/** A 2×32-bit FNV-1a hash of a string, with its length: the cache key of a message. */
function contentKey(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    a = Math.imul(a ^ code, 0x01000193);
    b = Math.imul(b ^ code, 0x5bd1e995) ^ (b >>> 15);
  }
  return `${(a >>> 0).toString(36)}.${(b >>> 0).toString(36)}.${text.length}`;
}

/** Counts conversations with a tokenizer, each distinct message once. */
export class TokenCache {
  private counts = new Map<string, number>();
  private used = new Set<string>();
  /** Each message object's key, so an unchanged message is neither rendered nor hashed again. */
  private keys = new WeakMap<Message, { key: string; text: string; media: number }>();
  /** Texts sent to the tokenizer so far (for tests and the benchmark). */
  counted = 0;

  constructor(
    private readonly encoding: TiktokenEncodingName,
    private readonly count: (input: CountTokensInput) => Promise<number[]>,
  ) {}

  /** Tokens of the messages; only messages not seen before reach the tokenizer. */
  async measure(messages: readonly Message[]): Promise<number> {
    const entries = messages.map((message) => {
      const known = this.keys.get(message);
      if (known) return known;
      const { text, media } = tokenizable(message);
      const entry = { key: contentKey(text), text, media };
      this.keys.set(message, entry);
      return entry;
    });
    const missing = new Map<string, string>();
    for (const entry of entries) if (!this.counts.has(entry.key)) missing.set(entry.key, entry.text);
    if (missing.size) {
      const texts = [...missing.values()];
      const counts = await this.count({ encoding: this.encoding, texts });
      this.counted += texts.length;
      [...missing.keys()].forEach((key, index) => this.counts.set(key, counts[index] ?? 0));
    }
    // Forget what neither this conversation nor the previous one used.
    const now = new Set(entries.map((entry) => entry.key));
    for (const key of this.counts.keys()) if (!now.has(key) && !this.used.has(key)) this.counts.delete(key);
    this.used = now;
    return entries.reduce((sum, entry) => sum + (this.counts.get(entry.key) ?? 0) + entry.media, 0);
  }
}
