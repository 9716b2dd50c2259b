/**
 * Structured output: the JSON Schema a run's final answer must match, how the answer is read
 * from the model's text and checked, and what the model is told when it does not match. The
 * schema travels as JSON Schema (in the resolved agent or the run's input) and is checked with
 * zod's `z.fromJSONSchema`, so the check is the same on every replay. Pure: safe in workflow code.
 */
import { z } from 'zod';
import { INJECTED_BY, messageText, type Message } from './messages';
import { describeZodError, firstIssuePath } from './schema-errors';

/** How many times the model is asked again after an answer that does not match, by default. */
export const DEFAULT_OUTPUT_RETRIES = 2;

/** The name the answer's schema goes by with a provider (a forced tool's, `response_format`'s), by default. */
export const DEFAULT_OUTPUT_NAME = 'output';

/** A JSON Schema (an object). */
export const JsonSchemaObjectSchema = z.record(z.string(), z.unknown());
export type JsonSchemaObject = z.infer<typeof JsonSchemaObjectSchema>;

/** What a run's final answer must be: one JSON value matching `schema`, asked again up to `retries` times. */
export const OutputSpecSchema = z
  .object({
    /** JSON Schema of the answer. */
    schema: JsonSchemaObjectSchema,
    /** How many times the model gets the validation error and tries again before the run fails (default 2). */
    retries: z.number().int().min(0).max(10).default(DEFAULT_OUTPUT_RETRIES),
    /** The schema's name as a provider is told it (letters, digits, `_`, `-`; default `output`). */
    name: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'a name of 1 to 64 letters, digits, "_" or "-"')
      .default(DEFAULT_OUTPUT_NAME),
  })
  .strict();
export type OutputSpec = z.infer<typeof OutputSpecSchema>;

/**
 * An output spec as config takes it: `{ schema, retries?, name? }`, or a JSON Schema alone (an
 * object without a `schema` key), which gets the defaults. `outputSpecOf` makes it a spec.
 */
export const OutputOptionSchema = z.union([
  OutputSpecSchema,
  JsonSchemaObjectSchema.refine((value) => !('schema' in value), 'an output spec with "schema" takes only schema, retries and name'),
]);
export type OutputOption = z.input<typeof OutputOptionSchema>;

/** The spec an output option stands for (a JSON Schema alone gets the defaults). */
export function outputSpecOf(option: OutputOption): OutputSpec {
  return OutputSpecSchema.parse('schema' in option ? option : { schema: option });
}

/** Metadata key of the message that tells the model its answer did not match: which retry it asks for (1, 2, ...). */
export const OUTPUT_RETRY_METADATA = 'outputRetry';

/** What checking an answer gives: the value, or what is wrong with it and where. */
export type OutputCheck = { ok: true; value: unknown } | { ok: false; error: string; path: string };

/**
 * Turns a JSON Schema into the zod schema that checks answers against it; throws a message
 * naming the problem when zod cannot read the schema.
 */
export function outputValidator(schema: JsonSchemaObject): z.ZodType {
  try {
    return z.fromJSONSchema(schema);
  } catch (error) {
    throw new Error(`the output schema is not a JSON Schema keel can check: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Strips a Markdown code fence around a JSON answer (some models add one). */
function unfenced(text: string): string {
  const trimmed = text.trim();
  const fenced = /^```[a-zA-Z]*\s*\n([\s\S]*?)\n?```$/.exec(trimmed);
  return fenced?.[1] !== undefined ? fenced[1].trim() : trimmed;
}

/** Reads the model's answer (its text, as JSON) and checks it; errors are `output.<path>: <what>`. */
export function checkAnswer(validator: z.ZodType, message: Message): OutputCheck {
  const text = unfenced(messageText(message));
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    const shown = text.length > 80 ? `${text.slice(0, 79)}…` : text;
    return { ok: false, path: 'output', error: `output: the answer is not JSON (${text ? `it begins ${JSON.stringify(shown)}` : 'it is empty'})` };
  }
  const parsed = validator.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  const path = firstIssuePath(parsed.error);
  return { ok: false, path: path ? `output.${path}` : 'output', error: describeZodError(parsed.error, 'output') };
}

/** The message that gives the model the validation error and asks again (retry `retry` of the run's answer). */
export function outputRetryMessage(error: string, retry: number): Message {
  return {
    role: 'user',
    content: [
      {
        text: `Your answer does not match the required output schema: ${error}. Answer again with only a JSON value that matches the schema, nothing else.`,
      },
    ],
    metadata: { [INJECTED_BY]: 'output', [OUTPUT_RETRY_METADATA]: retry },
  };
}

/** How many retries the conversation has asked for since the model's last answer that was not one (the retry count of its tail). */
export function retriesSoFar(messages: readonly Message[]): number {
  const last = messages.at(-1)?.metadata?.[OUTPUT_RETRY_METADATA];
  return typeof last === 'number' ? last : 0;
}

/** A JSON Schema as a provider is sent it: without the `$schema` dialect line some providers refuse. */
export function providerSchema(schema: JsonSchemaObject): JsonSchemaObject {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}
