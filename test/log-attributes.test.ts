/**
 * Worker logs say which run, agent and turn they are about: a workflow log (Fallback's
 * warning) and an activity log (a tool's own warning) carry the run id, the agent and the turn.
 */
import { log } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, defineTool } from '../src/define';
import { fallback } from '../src/features/fallback/fallback';
import { errorReply, scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { capturedLogs, sharedTestWorker } from './support/harness';

const noisy = defineTool({
  name: 'noisy',
  description: 'Logs a warning',
  input: z.object({}),
  run: async () => {
    log.warn('noisy tool says hello');
    return 'ok';
  },
});
const failing = scriptedModel({ name: 'scripted/logs-failing', script: [errorReply('UNAVAILABLE', 'down'), errorReply('UNAVAILABLE', 'down')] });
const working = scriptedModel({ name: 'scripted/logs-working', script: [toolCallReply({ name: 'noisy', input: {} }), textReply('done')] });
const registry = new Registry().add(
  noisy,
  failing,
  working,
  defineAgent({ name: 'logged', model: failing.name, tools: [noisy], use: [fallback({ models: [working.name] })] }),
);

const worker = sharedTestWorker(registry);

describe('worker logs', () => {
  it('carry the run id, the agent and the turn, in the workflow and in activities', async () => {
    const handle = await worker().client.start('logged', 'go');
    expect((await handle.result()).text).toBe('done');
    const ofRun = (message: string) => capturedLogs.find((entry) => entry.message === message && entry.meta?.workflowId === handle.runId);
    expect(ofRun('model call failed, falling back')?.meta).toMatchObject({ workflowId: handle.runId, agent: 'logged', turn: 1 });
    expect(ofRun('noisy tool says hello')?.meta).toMatchObject({ workflowId: handle.runId, agent: 'logged', turn: 1, activityType: 'callTool' });
  });
});
