/**
 * The agents bench/protocols.ts serves over MCP and A2A and starts directly: `bench-3turn`, a
 * scripted agent of three turns (two tool calls, then the answer), and `bench-held`, which waits
 * for approval of its one tool call (an open task); `bench-chat` (bench/chat.ts) keeps a session and
 * streams its answer. Not a test.
 */
import { z } from 'zod';
import { defineAgent, defineTool } from '../src/define';
import { toolApproval } from '../src/features/tool-approval/tool-approval';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';

export const step = defineTool({ name: 'bench_step', description: 'One step.', input: z.object({ n: z.number() }), run: ({ n }) => ({ n }) });

export const threeTurns = scriptedModel({
  name: 'scripted/bench-3turn',
  script: (request) => {
    const done = request.messages.filter((message) => message.role === 'tool').length;
    return done < 2 ? toolCallReply({ name: step.name, input: { n: done } }) : textReply('done in three turns');
  },
});

export const bench3turn = defineAgent({ name: 'bench-3turn', description: 'Three turns.', model: threeTurns.name, tools: [step] });
export const benchHeld = defineAgent({ name: 'bench-held', description: 'Waits for approval.', model: threeTurns.name, tools: [step], use: [toolApproval()] });

/** Streams its answer in 20 pieces, 100 ms apart: the chat's first text, and a turn long enough to reattach to. */
export const streamer = scriptedModel({
  name: 'scripted/bench-chat',
  script: () => ({ stream: Array.from({ length: 20 }, (_, index) => `piece ${index} `), chunkDelayMs: 100 }),
});
export const benchChat = defineAgent({ name: 'bench-chat', description: 'Streams its answers.', model: streamer.name, session: 'server' });
