/**
 * Lines to a terminal where a question may be waiting for a person (the demo's approval
 * prompt) while a run's progress goes on printing: a line written while the question is open
 * goes above it, and the question (with what was typed so far) is drawn again below, so no
 * progress line lands on the prompt. Node side.
 */
import { clearLine, cursorTo } from 'node:readline';
import { createInterface, type Interface } from 'node:readline/promises';

/** Writes lines and asks questions on one terminal. */
export interface PromptLines {
  /** Writes one line (above the question, when one is open). */
  say: (line: string) => void;
  /** Asks `question` and resolves to the answer; rejects when `signal` aborts (and, at a terminal, on Ctrl-D or Ctrl-C). */
  ask: (question: string, signal: AbortSignal) => Promise<string>;
}

/** Lines to `output`, questions read from `input`. */
export function promptLines(input: NodeJS.ReadableStream, output: NodeJS.WritableStream): PromptLines {
  let open: Interface | undefined;
  return {
    say(line) {
      if (!open) {
        output.write(`${line}\n`);
        return;
      }
      clearLine(output, 0);
      cursorTo(output, 0);
      output.write(`${line}\n`);
      open.prompt(true);
    },
    async ask(question, signal) {
      const prompt = createInterface({ input, output });
      open = prompt;
      try {
        return await prompt.question(question, { signal });
      } finally {
        open = undefined;
        prompt.close();
      }
    },
  };
}
