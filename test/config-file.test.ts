/**
 * The repository's own temporal.yaml: it validates, its modules and declarative entries
 * load, and the declarative `helper` agent (scripted model from YAML) runs end to end.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load';
import { loadRegistry } from '../src/worker/load-registry';
import { scheduledActivities } from './support/history';
import { startTestWorker } from './support/harness';
import { ROOT } from './support/processes';

describe('temporal.yaml of the repository', () => {
  it('registers the example and declarative agents, and runs the declarative one', async () => {
    const config = loadConfig({ path: join(ROOT, 'temporal.yaml'), explicit: true, env: {} });
    const registry = await loadRegistry(config);
    expect([...registry.agents.keys()].sort()).toEqual(['fare-scout', 'helper', 'tour', 'trip-planner']);
    expect(registry.models.has('scripted/helper')).toBe(true);

    const out = join(ROOT, '.keel', 'demo', 'out.txt');
    rmSync(out, { force: true });
    const worker = await startTestWorker(registry);
    try {
      const handle = await worker.client.start('helper', 'note this');
      const result = await handle.result();
      expect(result.text).toBe('done');
      // the scripted UNAVAILABLE on call 2 was retried by the agent's Retry middleware
      expect(await scheduledActivities(worker.client.temporal, handle.runId)).toEqual(['callModel', 'callTool', 'callModel', 'callModel']);
      expect(result.messages[0]).toEqual({ role: 'system', content: [{ text: 'You are helpful.' }] });
      expect(result.usage).toEqual({ inputTokens: 10, outputTokens: 5 });
      expect(existsSync(out) && readFileSync(out, 'utf8')).toBe('one\n');
    } finally {
      await worker.stop();
    }
  });
});
