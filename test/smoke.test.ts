import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, defineTool } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { startTestWorker } from './support/harness';

describe('smoke', () => {
  it('runs a two-turn loop', async () => {
    const echo = defineTool({ name: 'echo', description: 'echo', input: z.object({ v: z.string() }), run: ({ v }) => ({ v }) });
    const model = scriptedModel({ name: 'scripted/smoke', script: [toolCallReply({ name: 'echo', input: { v: 'x' } }), textReply('done')] });
    const registry = new Registry().add(echo, model, defineAgent({ name: 'smoke', model: model.name, tools: [echo] }));
    const worker = await startTestWorker(registry);
    try {
      const result = await worker.client.run('smoke', 'hi');
      expect(result.text).toBe('done');
      expect(result.messages.map((m) => m.role)).toEqual(['user', 'model', 'tool', 'model']);
    } finally {
      await worker.stop();
    }
  });
});
