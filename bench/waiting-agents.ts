/**
 * The agents of bench/many-waiting.ts, loaded by its `keel worker` child (a `modules` entry):
 * `waiting` holds its one tool call for approval and then answers; `long` makes `turns` tool
 * calls (its prompt) without holds, for a history of a given length to replay. Not a test.
 */
import { z } from 'zod';
import { defineAgent, defineTool } from '../src/define';
import { toolApproval } from '../src/features/tool-approval/tool-approval';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';

/** A tool that must be approved before each call. */
export const transfer = defineTool({
  name: 'transfer',
  description: 'Moves money.',
  input: z.object({ cents: z.number() }),
  run: ({ cents }) => ({ moved: cents }),
});

/** Asks for transfer until the conversation has its answer, then says done. */
export const waitingModel = scriptedModel({
  name: 'scripted/waiting',
  keepRequests: 0,
  script: (request) => (request.messages.at(-1)?.role === 'tool' ? textReply('done') : toolCallReply({ name: 'transfer', input: { cents: 100 } })),
});

/** Every run waits on ToolApproval at its first tool call. */
export const waiting = defineAgent({ name: 'waiting', model: waitingModel.name, tools: [transfer], use: [toolApproval()] });

/** A tool that answers at once. */
export const step = defineTool({ name: 'step', description: 'Takes a step.', input: z.object({ n: z.number() }), run: ({ n }) => ({ n }) });

/** Calls step once a turn until it made as many calls as the prompt says, then says done. */
export const longModel = scriptedModel({
  name: 'scripted/long',
  keepRequests: 0,
  script: (request) => {
    const first = request.messages.find((message) => message.role === 'user');
    const turns = Number(first?.content.map((part) => ('text' in part ? part.text : '')).join('') ?? 0);
    const done = request.messages.filter((message) => message.role === 'tool').length;
    return done < turns ? toolCallReply({ name: 'step', input: { n: done } }) : textReply('done');
  },
});

/** Up to 5,000 turns, continue-as-new at its defaults. */
export const long = defineAgent({ name: 'long', model: longModel.name, tools: [step], maxTurns: 5000 });

// BENCH_WAIT_MEMORY=1: the worker says every 10 s what its main thread's heap holds beside its RSS (where the memory is).
if (process.env.BENCH_WAIT_MEMORY) {
  setInterval(() => {
    const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
    const mib = (bytes: number) => Math.round(bytes / 2 ** 20);
    console.error(`memory: rss ${mib(rss)} MiB, main heap ${mib(heapUsed)} MiB, external ${mib(external)} MiB, array buffers ${mib(arrayBuffers)} MiB`);
  }, 10_000).unref();
}
