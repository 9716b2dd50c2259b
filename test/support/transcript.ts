/** Renders messages one line each, as the loop spec writes them. */
import type { Message } from '../../src/core/messages';

/** `role: part | part`, with tool calls as `call name#ref {json}` and results as `name#ref = {json}`. */
export function transcript(messages: Message[]): string[] {
  return messages.map((message) => {
    const parts = message.content.map((part) => {
      if ('text' in part) return part.text;
      if ('toolRequest' in part) return `call ${part.toolRequest.name}#${part.toolRequest.ref} ${JSON.stringify(part.toolRequest.input)}`;
      if ('toolResponse' in part) return `${part.toolResponse.name}#${part.toolResponse.ref} = ${JSON.stringify(part.toolResponse.output)}`;
      return JSON.stringify(part);
    });
    return `${message.role}: ${parts.join(' | ')}`;
  });
}
