/**
 * The `judgeAnswer` activity (the `judge` scorer, docs/eval.md): the suite's judge model, as this
 * worker registered it, reads the rubric, what the user asked and the agent's answer, and
 * answers one JSON value `{ pass, reason }`. An answer that is not one is tried again (the
 * activity's retries); a model the worker lacks is NOT_FOUND. Node side.
 */
import { Context } from '@temporalio/activity';
import { KeelError } from '../../../core/errors';
import { checkAnswer, outputValidator } from '../../../core/output';
import { implementActivity } from '../../../activities/feature-activity';
import { judgeDoor } from '../scorers';

const VERDICT_SCHEMA = {
  type: 'object',
  properties: { pass: { type: 'boolean' }, reason: { type: 'string' } },
  required: ['pass', 'reason'],
  additionalProperties: false,
};

const SYSTEM = [
  "You grade an AI agent's answer against a rubric.",
  'Read the rubric, what the user asked, and the answer. Answer with one JSON object:',
  '{"pass": true or false, "reason": "one sentence: why"}.',
].join(' ');

/** The Node half of the eval feature: the judge. */
export const evalActivities = [
  implementActivity(judgeDoor, async ({ model: name, rubric, prompt, answer }, { registry }) => {
    const model = registry?.models.get(name);
    if (!model) {
      throw new KeelError(
        'NOT_FOUND',
        `judge model "${name}" is not registered on this worker; registered models: ${[...(registry?.models.keys() ?? [])].sort().join(', ') || '(none)'}`,
      );
    }
    const info = Context.current().info;
    const response = await model.generate(
      {
        messages: [
          { role: 'system', content: [{ text: SYSTEM }] },
          { role: 'user', content: [{ text: `Rubric:\n${rubric}\n\nThe user asked:\n${prompt}\n\nThe agent answered:\n${answer}` }] },
        ],
        tools: [],
        output: { format: 'json', schema: VERDICT_SCHEMA, name: 'verdict' },
      },
      {
        callIndex: info.attempt - 1,
        runId: info.workflowExecution?.workflowId ?? '',
        heartbeat: () => Context.current().heartbeat(),
        signal: Context.current().cancellationSignal,
      },
    );
    const checked = checkAnswer(outputValidator(VERDICT_SCHEMA), response.message);
    if (!checked.ok) throw new Error(`judge model "${name}" did not answer {pass, reason}: ${checked.error}`);
    return checked.value as { pass: boolean; reason: string };
  }),
];
