/**
 * Sends a message to a keel agent over A2A with the official A2A JavaScript SDK (docs/a2a.md):
 * `npx tsx examples/a2a/ask-agent.ts http://127.0.0.1:8234/a2a/<agent>/ <prompt...>`. Streams the
 * task's updates to stderr and prints its answer to stdout; when the task needs input (a call
 * held for approval), it asks on the terminal and sends the decision as a data part.
 */
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline/promises';
import { Role, TaskState, type Message, type Part } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';

const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const data = (value: unknown): Part => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });
const textsOf = (parts: readonly Part[] = []) => parts.flatMap((part) => (part.content?.$case === 'text' ? [part.content.value] : []));

const message = (parts: Part[], taskId = '', contextId = ''): Message => ({
  messageId: randomUUID(),
  contextId,
  taskId,
  role: Role.ROLE_USER,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

/** Streams one message's task until it ends or needs input; returns the task id and whether it needs input. */
async function stream(client: Client, sent: Message): Promise<{ taskId: string; contextId: string; needsInput: boolean; question: string }> {
  let taskId = sent.taskId;
  let contextId = sent.contextId;
  let needsInput = false;
  let question = '';
  for await (const event of client.sendMessageStream({ tenant: '', message: sent, configuration: undefined, metadata: undefined })) {
    const payload = event.payload;
    if (payload?.$case === 'task') ({ id: taskId, contextId } = payload.value);
    else if (payload?.$case === 'statusUpdate') {
      const said = textsOf(payload.value.status?.message?.parts).join(' ');
      needsInput = payload.value.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED;
      if (needsInput) question = said;
      else if (said) process.stderr.write(`… ${said}\n`);
    } else if (payload?.$case === 'artifactUpdate') process.stdout.write(`${textsOf(payload.value.artifact?.parts).join('\n')}\n`);
  }
  return { taskId, contextId, needsInput, question };
}

async function main(): Promise<number> {
  const [url, ...words] = process.argv.slice(2);
  if (!url || !words.length) {
    process.stderr.write('usage: npx tsx examples/a2a/ask-agent.ts <agent base URL, ending in /> <prompt...>\n');
    return 2;
  }
  const client = await new ClientFactory().createFromUrl(url);
  let step = await stream(client, message([text(words.join(' '))]));
  while (step.needsInput) {
    const terminal = createInterface({ input: process.stdin, output: process.stderr });
    const answer = await terminal.question(`${step.question} [y/N] `);
    terminal.close();
    step = await stream(client, message([data({ approved: /^y/i.test(answer.trim()) })], step.taskId, step.contextId));
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`ask-agent: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
