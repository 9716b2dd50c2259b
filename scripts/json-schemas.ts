/**
 * The JSON Schema files of keel's protocol (docs/protocol.md), generated from the zod schemas
 * in src/core: `npx tsx scripts/json-schemas.ts` writes them to schemas/; a test fails when
 * they are out of date.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { DecisionAcceptedSchema, DecisionSchema } from '../src/core/holds';
import { MessageSchema } from '../src/core/messages';
import { RunInputSchema, RunResultSchema, RunStatusSchema } from '../src/core/run';
import { SteerInputSchema, SteerRecordSchema } from '../src/core/steering';

/** Each schema file: name, what it describes, the zod schema (`input`: what a client sends). */
const SCHEMAS: Array<{ file: string; title: string; schema: z.ZodType; io: 'input' | 'output' }> = [
  { file: 'run-input.json', title: 'The start input of generateWorkflow', schema: RunInputSchema, io: 'input' },
  { file: 'run-result.json', title: 'The result of generateWorkflow', schema: RunResultSchema, io: 'output' },
  { file: 'run-status.json', title: 'The answer of the status query', schema: RunStatusSchema, io: 'output' },
  { file: 'decision.json', title: 'The argument of the resume update and signal', schema: DecisionSchema, io: 'input' },
  { file: 'decision-accepted.json', title: 'The answer of the resume update', schema: DecisionAcceptedSchema, io: 'output' },
  { file: 'steer.json', title: 'The argument of the steer update', schema: SteerInputSchema, io: 'input' },
  { file: 'steer-record.json', title: 'The answer of the steer update (and one entry of status.steering)', schema: SteerRecordSchema, io: 'output' },
  { file: 'message.json', title: 'One message of a conversation (the messages query answers an array of them)', schema: MessageSchema, io: 'output' },
];

/** The files' contents, by file name. */
export function jsonSchemas(): Record<string, string> {
  return Object.fromEntries(
    SCHEMAS.map(({ file, title, schema, io }) => {
      const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
      return [file, `${JSON.stringify({ $schema: json.$schema, title, ...json }, null, 2)}\n`];
    }),
  );
}

/** The folder the files live in. */
export const SCHEMA_DIR = join(__dirname, '..', 'schemas');

if (require.main === module) {
  for (const [file, text] of Object.entries(jsonSchemas())) writeFileSync(join(SCHEMA_DIR, file), text);
  console.log(`wrote ${Object.keys(jsonSchemas()).length} schemas to ${SCHEMA_DIR}`);
}
