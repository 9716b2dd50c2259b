/**
 * Helpers for hooks that touch what a run returns. Pure: runs in the workflow.
 */
import type { Message } from '../core/messages';
import type { GenerateOutcome } from './types';

/** The outcome with its final message (the response's, the last of `messages`) replaced. */
export function replaceFinalMessage(outcome: GenerateOutcome, message: Message): GenerateOutcome {
  return { response: { ...outcome.response, message }, messages: [...outcome.messages.slice(0, -1), message] };
}
