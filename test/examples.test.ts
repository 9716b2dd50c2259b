/** The docs' example module loads and registers what the docs say. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRegistry } from '../src/worker/load-registry';
import { ROOT } from './support/processes';

describe('examples/middleware.ts', () => {
  it('registers the documented agents with their middleware', async () => {
    const registry = await loadRegistry({ modules: [join(ROOT, 'examples', 'middleware.ts')], models: [], agents: [], baseDir: ROOT });
    expect([...registry.agents.keys()].sort()).toEqual(['analyst', 'janitor', 'researcher', 'support', 'writer']);
    expect(registry.agents.get('analyst')!.use).toEqual([
      { name: 'budget', config: { limit: { totalTokens: 200_000, custom: { cost: 2 } }, scope: 'run', interrupt: true } },
    ]);
    expect(registry.agents.get('support')!.use).toEqual([
      { name: 'fallback', config: { models: [{ name: 'anthropic/claude-sonnet-4-5', config: { max_tokens: 1024 } }, { name: 'ollama/llama3.1' }] } },
      { name: 'retry', config: { maxRetries: 2 } },
    ]);
    expect(registry.agents.get('researcher')!.use).toEqual([{ name: 'softToolErrors', config: { tools: [] } }]);
    expect([...registry.models.keys()].sort()).toEqual(['anthropic/claude-sonnet-4-5', 'ollama/llama3.1', 'openai/gpt-4o-mini']);
  });
});

describe('examples/orchestrator.ts', () => {
  it('registers the orchestrator of docs/agents.md with its sub-agents and middleware', async () => {
    const registry = await loadRegistry({ modules: [join(ROOT, 'examples', 'orchestrator.ts')], models: [], agents: [], baseDir: ROOT });
    expect([...registry.agents.keys()].sort()).toEqual(['orchestrator', 'researcher', 'writer']);
    expect(registry.agents.get('orchestrator')!.use).toEqual([
      { name: 'budget', config: { limit: { totalTokens: 500_000 }, scope: 'run', interrupt: false } },
      {
        name: 'agents',
        config: {
          agents: [{ name: 'researcher' }, { name: 'writer' }],
          maxDelegations: 6,
          historyLength: 0,
          artifactStrategy: 'session',
          async: true,
          maxWaitSeconds: 300,
        },
      },
      { name: 'artifacts', config: { readonly: false } },
    ]);
  });
});
