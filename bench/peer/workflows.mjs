// The peer's agent loop: the AI SDK's generateText in a workflow, through @temporalio/ai-sdk
// (each model call an activity), one tool (an activity) returning 20 KiB per call.
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { proxyActivities } from '@temporalio/workflow';

const { chunk } = proxyActivities({ startToCloseTimeout: '1 minute' });

export async function peerLoop(turns) {
  const result = await generateText({
    model: temporalProvider.languageModel('scripted'),
    prompt: 'go',
    tools: {
      chunk: tool({
        description: 'Returns 20 KiB.',
        inputSchema: jsonSchema({ type: 'object', properties: { turn: { type: 'number' } }, required: ['turn'] }),
        execute: (input) => chunk(input),
      }),
    },
    stopWhen: stepCountIs(turns + 1),
  });
  return result.text;
}
