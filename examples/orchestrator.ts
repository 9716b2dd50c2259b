/**
 * The orchestrator of docs/agents.md, type-checked with the project so the docs' examples
 * compile: an orchestrator that delegates to a researcher (in the background) and a writer,
 * under one budget for the whole tree, and a client that starts it, follows its background
 * tasks and approves a hold deep in the tree. Not loaded by temporal.yaml: it needs a real
 * model endpoint.
 */
import { defineAgent, KeelClient, type KeelConfig } from 'keel-agents';
import { agents, artifacts, budget, toolApproval } from 'keel-agents/middleware';

export const researcher = defineAgent({
  name: 'researcher',
  description: 'Searches the web and summarizes findings.',
  model: 'openai/gpt-4o-mini',
  tools: ['search', 'fetch_page'],
});

export const writer = defineAgent({
  name: 'writer',
  description: 'Writes reports as artifacts.',
  model: 'openai/gpt-4o-mini',
  tools: ['publish'],
  // Writing is free; publishing needs a person, even deep in the tree.
  use: [artifacts(), toolApproval({ allowedTools: ['read_artifact', 'write_artifact'] })],
});

export const orchestrator = defineAgent({
  name: 'orchestrator',
  description: 'Plans the work and hands it to sub-agents.',
  model: 'openai/gpt-4o-mini',
  system: 'You run a small research team. Delegate research in the background, have the writer write the report.',
  use: [
    budget({ limit: { totalTokens: 500_000 } }), // counts the orchestrator and every sub-agent
    agents({ agents: ['researcher', 'writer'], async: true, maxDelegations: 6, maxWaitSeconds: 300, artifactStrategy: 'session' }),
    artifacts(),
  ],
});

/** Starts the orchestrator, reports its background tasks, and approves every hold, nested ones included. */
export async function orchestrate(config: KeelConfig): Promise<string> {
  const client = await KeelClient.connect(config);
  try {
    const run = await client.start('orchestrator', 'Write a one-page report on durable execution.');
    for (;;) {
      const status = await run.status();
      if (status.state === 'completed' || status.state === 'failed' || status.state === 'cancelled') break;
      for (const task of await run.tasks()) console.log(`${task.taskId} ${task.status}`);
      // A hold inside a sub-agent shows here too, with its path; the decision reaches it.
      for (const interrupt of status.interrupts) await run.approve(interrupt.id);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const result = await run.result();
    return `${result.text}\n(artifacts: ${result.artifacts.map((artifact) => artifact.name).join(', ')})`;
  } finally {
    await client.close();
  }
}
