/**
 * Text a middleware keeps in the system prompt and refreshes every iteration (an artifacts
 * listing, a sub-agents block, a skills catalog): the part it tagged is replaced when its
 * text changed, never added twice. Returns new messages; the given ones are not modified.
 * Pure: runs in the workflow.
 */
import type { Message, Part } from '../core/messages';

/**
 * The conversation with `text` in the system prompt, in a text part tagged with metadata
 * `{ [marker]: value }` (two instances with different values keep two parts): the tagged part is replaced in place if present (and unchanged if its
 * text is the same), else appended to the first system message, else a system message is put
 * at the front.
 */
export function injectSystemText(messages: readonly Message[], marker: string, text: string, value: string | true = true): Message[] {
  const part: Part = { text, metadata: { [marker]: value } };
  // A part tagged with this value is ours; so is one tagged `true` (a legacy tag), which is upgraded.
  const tagged = (candidate: Part) => 'text' in candidate && (candidate.metadata?.[marker] === value || candidate.metadata?.[marker] === true);
  const holder = messages.findIndex((message) => message.role === 'system' && message.content.some(tagged));
  if (holder >= 0) {
    const message = messages[holder]!;
    const current = message.content.find(tagged) as { text: string };
    if (current.text === text) return [...messages];
    return messages.map((candidate, index) =>
      index === holder ? { ...message, content: message.content.map((existing) => (tagged(existing) ? part : existing)) } : candidate,
    );
  }
  const system = messages.findIndex((message) => message.role === 'system');
  if (system >= 0) return messages.map((message, index) => (index === system ? { ...message, content: [...message.content, part] } : message));
  return [{ role: 'system', content: [part] }, ...messages];
}
