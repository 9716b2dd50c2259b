/**
 * The agents of docs/middleware/*.md, type-checked with the project so the docs' examples
 * compile. Not loaded by temporal.yaml: they need real model endpoints.
 */
import { z } from 'zod';
import { anthropicModel, defineAgent, defineTool, openAICompatibleModel } from 'keel-agents';
import { budget, fallback, retry, softToolErrors, toolApproval } from 'keel-agents/middleware';

export const gpt = openAICompatibleModel({ name: 'openai/gpt-4o-mini' });
export const claude = anthropicModel({ name: 'anthropic/claude-sonnet-4-5' });
export const llama = openAICompatibleModel({ name: 'ollama/llama3.1', baseUrl: 'http://127.0.0.1:11434/v1' });

export const search = defineTool({
  name: 'search',
  description: 'Searches the web.',
  input: z.object({ query: z.string() }),
  async run({ query }) {
    return { results: [`nothing found for ${query}`] };
  },
});

export const fetchPage = defineTool({
  name: 'fetch_page',
  description: 'Fetches a page.',
  input: z.object({ url: z.url() }),
  async run({ url }, { signal }) {
    const response = await fetch(url, { signal });
    return { status: response.status, text: (await response.text()).slice(0, 10_000) };
  },
});

/** docs/middleware/retry.md */
export const writer = defineAgent({
  name: 'writer',
  model: 'openai/gpt-4o-mini',
  use: [retry({ maxRetries: 3, initialDelayMs: 1000 })],
});

/** docs/middleware/fallback.md */
export const support = defineAgent({
  name: 'support',
  model: 'openai/gpt-4o-mini',
  use: [
    fallback({ models: [{ name: 'anthropic/claude-sonnet-4-5', config: { max_tokens: 1024 } }, 'ollama/llama3.1'] }),
    retry({ maxRetries: 2 }), // inside Fallback: retries the primary before falling over
  ],
});

/** docs/middleware/soft-tool-errors.md */
export const researcher = defineAgent({
  name: 'researcher',
  model: 'openai/gpt-4o-mini',
  tools: [search, fetchPage],
  use: [softToolErrors()], // every tool, and unknown tool names; or softToolErrors({ tools: ['search'] })
});

export const deleteFile = defineTool({
  name: 'delete_file',
  description: 'Deletes a file.',
  input: z.object({ path: z.string() }),
  async run({ path }) {
    return { deleted: path };
  },
});

/** docs/middleware/tool-approval.md */
export const janitor = defineAgent({
  name: 'janitor',
  model: 'openai/gpt-4o-mini',
  tools: [search, deleteFile],
  use: [
    toolApproval({
      allowedTools: ['search'],
      judge: 'openai/gpt-4o-mini',
      judgePolicy: 'Never allow deleting files outside the build directory.',
    }),
  ],
});

/** docs/middleware/budget.md */
export const analyst = defineAgent({
  name: 'analyst',
  model: 'openai/gpt-4o-mini',
  tools: [search, fetchPage],
  use: [budget({ limit: { totalTokens: 200_000, custom: { cost: 2 } }, interrupt: true })],
});

/** docs/holds.md: a tool that asks its own question. */
export const deploy = defineTool({
  name: 'deploy',
  description: 'Deploys a service after the user confirms.',
  input: z.object({ service: z.string() }),
  async run({ service }, { interrupt, resumed }) {
    // First call: hold for a person. On restart, `resumed` carries their answer.
    if (!resumed) interrupt({ question: `Deploy ${service} to production?` });
    const answer = resumed as { approved?: boolean };
    return answer.approved ? { deployed: service } : { deployed: null };
  },
});
