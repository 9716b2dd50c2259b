/**
 * RecordedTools: the middleware an eval case's run gets (docs/eval.md). A tool call the record
 * has (the same tool with the same input, as JSON with its keys in order) is answered with the
 * recorded output, and the tool never runs; repeated calls take the recorded ones in order, then
 * the last again. A call the record lacks follows the suite's policy: `fail` fails the run
 * naming the call, `real` runs the tool when the suite marks it safe (else fails), `stub`
 * answers with the suite's stub for the tool (null without one). Runs in the workflow.
 */
import { z } from 'zod';
import { KeelError } from '../../core/errors';
import { defineMiddleware } from '../../middleware/define-middleware';
import { MissingPolicySchema, ToolRecordSchema } from './suite';

/** RecordedTools' config. */
export const RecordedToolsConfigSchema = z
  .object({
    records: z.array(ToolRecordSchema).default([]),
    missing: MissingPolicySchema.default('fail'),
    safe: z.array(z.string()).default([]),
    stubs: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();

/** JSON with every object's keys in order: two inputs are the same call when these are equal. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value ?? null);
}

const callKey = (name: string, input: unknown) => `${name} ${canonicalJson(input)}`;

/** RecordedTools: `use: [recordedTools({ records, missing, safe, stubs })]`. */
export const recordedTools = defineMiddleware({
  name: 'recordedTools',
  description: 'Answers tool calls from a recorded run (eval cases).',
  configSchema: RecordedToolsConfigSchema,
  create({ records, missing, safe, stubs }) {
    const byCall = new Map<string, unknown[]>();
    for (const record of records) byCall.set(callKey(record.name, record.input), [...(byCall.get(callKey(record.name, record.input)) ?? []), record.output]);
    const taken = new Map<string, number>();
    return {
      async wrapTool(params, next) {
        const { name, input } = params.request;
        const key = callKey(name, input);
        const outputs = byCall.get(key);
        if (outputs) {
          const index = taken.get(key) ?? 0;
          taken.set(key, index + 1);
          return outputs[Math.min(index, outputs.length - 1)];
        }
        const call = `tool "${name}" was called with ${canonicalJson(input)}, which the recorded run lacks`;
        if (missing === 'stub') return stubs[name] ?? null;
        if (missing === 'real' && safe.includes(name)) return next(params);
        throw new KeelError(
          'FAILED_PRECONDITION',
          missing === 'real' ? `${call}, and the suite does not mark "${name}" safe to call for real` : `${call} (missing: fail)`,
          { toolName: name },
        );
      },
    };
  },
});
