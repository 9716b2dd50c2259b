/**
 * The scorers of an eval case (docs/eval.md): each reads the case run's result (its answer, the
 * tool calls in its conversation) and passes or fails, saying why in one line. The `judge`
 * scorer asks a model, through the `judgeAnswer` activity; the rest are pure. Runs in the
 * workflow.
 */
import { z } from 'zod';
import { messageText, type Message } from '../../core/messages';
import { checkAnswer, outputValidator } from '../../core/output';
import type { RunResult } from '../../core/run';
import { defineActivity } from '../../middleware/activity-door';
import { canonicalJson } from './recorded-tools';
import { conversationCalls } from '../../core/fork';
import type { EvalCase, ScoreResult, Scorer } from './suite';

/** The judge's activity: the model reads the rubric, the prompt and the answer, and answers `{ pass, reason }`. */
export const judgeDoor = defineActivity({
  name: 'judgeAnswer',
  input: z.object({ model: z.string(), rubric: z.string(), prompt: z.string(), answer: z.string() }).strict(),
  output: z.object({ pass: z.boolean(), reason: z.string() }).strict(),
  options: { startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 5, nonRetryableErrorTypes: ['INVALID_ARGUMENT', 'NOT_FOUND'] } },
  describe: ({ model }) => `judge ${model}`,
});

/** The scorer as the report names it: its kind and what it looks for. */
export function scorerLabel(scorer: Scorer): string {
  const [kind, value] = Object.entries(scorer)[0] as [string, unknown];
  if (kind === 'judge') return `judge ${(value as { model: string }).model}`;
  if (kind === 'schema' || kind === 'sameAsRecorded') return kind;
  if (kind === 'tool' && 'input' in scorer && scorer.input) return `tool ${scorer.tool} ${canonicalJson(scorer.input)}`;
  return `${kind} ${JSON.stringify(value)}`;
}

/** The tool calls of a conversation: name and input. */
export const toolCalls = (messages: readonly Message[]): Array<{ name: string; input: unknown }> =>
  [...conversationCalls(messages).values()].map((call) => ({ name: call.toolName, input: call.input }));

/** True when `input` has every field of `fields` with the same value (as JSON). */
function hasFields(input: unknown, fields: Record<string, unknown>): boolean {
  if (!input || typeof input !== 'object') return false;
  return Object.entries(fields).every(([key, value]) => canonicalJson((input as Record<string, unknown>)[key]) === canonicalJson(value));
}

const shown = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 79)}…` : text);

/** One scorer's verdict on a result; `judge` calls the judge activity. */
export async function score(
  scorer: Scorer,
  {
    result,
    evalCase,
    judge,
  }: { result: RunResult; evalCase: EvalCase; judge: (input: z.input<typeof judgeDoor.input>) => Promise<{ pass: boolean; reason: string }> },
): Promise<ScoreResult> {
  const text = result.text;
  const label = scorerLabel(scorer);
  const verdict = (passed: boolean, reason: string): ScoreResult => ({ scorer: label, passed, reason });
  if ('contains' in scorer)
    return verdict(text.includes(scorer.contains), text.includes(scorer.contains) ? 'found' : `the answer ${shown(text)} lacks ${shown(scorer.contains)}`);
  if ('notContains' in scorer)
    return verdict(
      !text.includes(scorer.notContains),
      text.includes(scorer.notContains) ? `the answer ${shown(text)} has ${shown(scorer.notContains)}` : 'absent',
    );
  if ('equals' in scorer) return verdict(text === scorer.equals, text === scorer.equals ? 'equal' : `the answer is ${shown(text)}`);
  if ('matches' in scorer) {
    const matched = new RegExp(scorer.matches).test(text);
    return verdict(matched, matched ? 'matched' : `the answer ${shown(text)} does not match /${scorer.matches}/`);
  }
  if ('sameAsRecorded' in scorer) {
    if (evalCase.recordedText === undefined) return verdict(false, 'the case has no recorded answer');
    return verdict(
      text === evalCase.recordedText,
      text === evalCase.recordedText ? 'the recorded answer' : `the answer is ${shown(text)}; recorded: ${shown(evalCase.recordedText)}`,
    );
  }
  const calls = toolCalls(result.messages);
  if ('tool' in scorer) {
    const named = calls.filter((call) => call.name === scorer.tool);
    const found = named.some((call) => !scorer.input || hasFields(call.input, scorer.input));
    const why = named.length
      ? `called with ${named.map((call) => canonicalJson(call.input)).join(', ')}`
      : `not called (calls: ${calls.map((call) => call.name).join(', ') || 'none'})`;
    return verdict(found, found ? 'called' : why);
  }
  if ('noTool' in scorer) {
    const count = calls.filter((call) => call.name === scorer.noTool).length;
    return verdict(count === 0, count === 0 ? 'not called' : `called ${count} ${count === 1 ? 'time' : 'times'}`);
  }
  if ('schema' in scorer) {
    let validator;
    try {
      validator = outputValidator(scorer.schema);
    } catch (error) {
      return verdict(false, (error as Error).message);
    }
    const message = result.output !== undefined ? { role: 'model' as const, content: [{ text: JSON.stringify(result.output) }] } : result.message;
    if (!message) return verdict(false, 'the run has no answer');
    const checked = checkAnswer(validator, message);
    return verdict(checked.ok, checked.ok ? 'matches' : checked.error);
  }
  const prompt = evalCase.messages
    .filter((message) => message.role === 'user')
    .map(messageText)
    .join('\n');
  const judged = await judge({ model: scorer.judge.model, rubric: scorer.judge.rubric, prompt, answer: text });
  return verdict(judged.pass, judged.reason);
}
