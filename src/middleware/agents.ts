/**
 * Agents (reference: genkit-middleware-exp/agents): delegation to sub-agents. Each
 * configured agent gets a `delegate_to_<agent>` tool; a delegation runs the sub-agent as a
 * child run (a child workflow) and returns its answer, with its artifacts merged into this
 * run's under a namespace. A `<sub-agents>` block in the system prompt lists the tools.
 * Runs in the workflow: the tools are workflow-local, the sub-agent's work is its own run.
 */
import { log } from '@temporalio/workflow';
import { z } from 'zod';
import { artifactText, type Artifact } from '../core/artifacts';
import type { Message } from '../core/messages';
import type { RunResult } from '../core/run';
import { defineMiddleware } from './define-middleware';
import { BACKGROUND_TOOLS, backgroundTools } from './agents-tasks';
import { injectSystemText } from './system-text';
import type { ContributedTool, MiddlewareContext, ToolCallParams } from './types';

/** Metadata key tagging the `<sub-agents>` block of the system prompt (the reference's). */
export const AGENTS_INSTRUCTIONS_MARKER = 'agents-instructions';

/** The default prefix of delegation tools (`delegate_to_<agent>`). */
export const DEFAULT_TOOL_PREFIX = 'delegate_to';

/** A sub-agent: its registered name, and a description that overrides the registered one. */
const AgentRefSchema = z.union([
  z.string().min(1, 'an agent name must not be empty').transform((name) => ({ name, description: undefined as string | undefined })),
  z.object({ name: z.string().min(1, 'an agent name must not be empty'), description: z.string().optional() }).strict(),
]);

/** Finish reasons that carry an answer (others explain why there is none). */
const RESULT_REASONS = new Set(['stop', 'other', 'unknown']);

/** Name of a delegation tool: `<prefix>_<agent>`, or the bare agent name for an empty prefix. */
export function delegationToolName(prefix: string | undefined, agent: string): string {
  const effective = prefix ?? DEFAULT_TOOL_PREFIX;
  return effective === '' ? agent : `${effective}_${agent}`;
}

/** Name of a shared tool (background tasks, continue): prefixed only by an explicit, non-empty prefix. */
export function sharedToolName(prefix: string | undefined, base: string): string {
  return prefix ? `${prefix}_${base}` : base;
}

/** Agents' config. */
export const AgentsConfigSchema = z
  .object({
    /** Sub-agents available for delegation (at least one). */
    agents: z.array(AgentRefSchema).min(1, 'list at least one agent'),
    /** Prefix of delegation tools; unset = "delegate_to", "" = bare agent names. */
    toolPrefix: z.string().optional(),
    /** Delegations allowed per run; 0 = unlimited. */
    maxDelegations: z.number().int().min(0).default(0),
    /** Recent user/model messages forwarded to a sub-agent besides the task; 0 = the task only. */
    historyLength: z.number().int().min(0).default(0),
    /** `inline` (default): artifact content in the tool result too; `session`: names only. */
    artifactStrategy: z
      .string()
      .default('inline')
      .transform((strategy) => (strategy === 'session' ? 'session' : 'inline')),
    /** Background delegation: `background: true` on a delegation, and the check / wait / abort tools. */
    async: z.boolean().default(false),
    /** Bound on one wait_for_background_tasks call, in seconds, whatever the model asks; 0 = none. */
    maxWaitSeconds: z.number().int().min(0, 'must not be negative').default(0),
  })
  .strict()
  .superRefine((config, issues) => {
    const owners = new Map<string, string>();
    const claim = (tool: string, owner: string) => {
      const previous = owners.get(tool);
      if (previous) issues.addIssue({ code: 'custom', path: ['agents'], message: `tool name "${tool}" is claimed by ${previous} and by ${owner}` });
      else owners.set(tool, owner);
    };
    for (const agent of config.agents) claim(delegationToolName(config.toolPrefix, agent.name), `agent "${agent.name}"`);
    if (config.async) for (const base of Object.values(BACKGROUND_TOOLS)) claim(sharedToolName(config.toolPrefix, base), 'the background-task tools');
  });
export type AgentsConfig = z.input<typeof AgentsConfigSchema>;
type ResolvedConfig = z.output<typeof AgentsConfigSchema>;

/** Input of a delegation tool. */
const DelegationInputSchema = z.object({ task: z.string().min(1), name: z.string().optional(), background: z.boolean().optional() }).loose();

/** What a delegation answers the model. */
interface DelegationOutput {
  response: string;
  artifacts?: Array<{ name: string; content?: string }>;
  taskId?: string;
  status?: 'pending';
  name?: string;
}

/** The `<sub-agents>` block: every delegation tool with what its agent does, and how background tasks work. */
export function subAgentsBlock(entries: ReadonlyArray<{ tool: string; description: string }>, background?: { check: string; wait: string; abort: string }): string {
  return [
    '<sub-agents>',
    'You can hand tasks to these sub-agents, each through its own tool:',
    ...entries.map(({ tool, description }) => `  - ${tool}: ${description}`),
    '',
    'Delegate a task when a sub-agent is better suited to it. Describe the task completely: the sub-agent sees only what you send it.',
    ...(background
      ? [
          '',
          `To let a sub-agent work while you go on, delegate with "background": true: you get a taskId at once. ${background.check} reports where tasks stand, ${background.wait} waits for them (all, or the first to finish) and returns their results, ${background.abort} stops tasks you no longer need. Background tasks keep running across turns; the taskIds you were given stay valid.`,
        ]
      : []),
    '</sub-agents>',
  ].join('\n');
}

/** The last `count` user and model messages, reduced to their text (messages without text skipped). */
export function forwardedHistory(messages: readonly Message[], count: number): Message[] {
  if (count <= 0) return [];
  const texts = messages.flatMap((message): Message[] => {
    if (message.role !== 'user' && message.role !== 'model') return [];
    const content = message.content.filter((part) => 'text' in part && part.text !== '').map((part) => ({ text: (part as { text: string }).text }));
    return content.length ? [{ role: message.role, content }] : [];
  });
  return texts.slice(-count);
}

/** The namespace of a sub-agent run's artifacts: `<agent>_<n>` from its run id `<parent>/<agent>-<n>`. */
function namespaceOf(agent: string, runId: string): string {
  const match = /-(\d+)$/.exec(runId);
  return `${agent}_${match ? match[1] : runId.slice(-8)}`;
}

/** The answer a finished sub-agent run gives the delegating model. */
function foldResult(agent: string, result: RunResult, artifacts: number): string {
  const text = result.text;
  if (!RESULT_REASONS.has(result.finishReason)) {
    return `Error calling agent "${agent}": its run ended as "${result.finishReason}" without completing the task; its last message was: ${text}.`;
  }
  if (text) return text;
  if (artifacts === 0) return 'The task completed, but the agent gave no final message and produced no artifacts.';
  return artifacts === 1 ? 'The task completed without a final message; its result is in the one artifact it produced.' : `The task completed without a final message; its result is in the ${artifacts} artifacts it produced.`;
}

/** Agents: `use: [agents({ agents: ['researcher', { name: 'coder', description: 'Writes code.' }] })]` */
export const agents = defineMiddleware({
  name: 'agents',
  description: 'Delegates tasks to sub-agents, each run as a child run of its own.',
  configSchema: AgentsConfigSchema,
  create(config: ResolvedConfig, context: MiddlewareContext) {
    const registered = new Map(context.agent.directory.map((entry) => [entry.name, entry.description]));
    let delegations = 0;
    const background = config.async
      ? { check: sharedToolName(config.toolPrefix, BACKGROUND_TOOLS.check), wait: sharedToolName(config.toolPrefix, BACKGROUND_TOOLS.wait), abort: sharedToolName(config.toolPrefix, BACKGROUND_TOOLS.abort) }
      : undefined;

    /** Merges a sub-agent's named artifacts into this run under `<namespace>/<name>`; lists them for the model. */
    const mergeArtifacts = (agent: string, namespace: string, produced: readonly Artifact[]) =>
      produced
        .filter((artifact) => artifact.name !== '')
        .map((artifact) => {
          const name = `${namespace}/${artifact.name}`;
          context.artifacts.put({ ...artifact, name, metadata: { ...artifact.metadata, source: agent, invocationId: namespace } });
          return config.artifactStrategy === 'inline' ? { name, content: artifactText(artifact) } : { name };
        });

    const delegate = async (agent: string, rawInput: unknown, params: ToolCallParams): Promise<DelegationOutput> => {
      const input = DelegationInputSchema.safeParse(rawInput);
      if (!input.success) return { response: `Error: give the task to delegate as a non-empty "task" string.` };
      const label = input.data.name !== undefined ? { name: input.data.name } : {};
      if (config.maxDelegations > 0 && delegations >= config.maxDelegations) {
        log.warn('delegation limit reached', { agent, maxDelegations: config.maxDelegations });
        return { response: `Delegation limit reached (${config.maxDelegations}). Finish the task with what you have gathered so far.`, ...label };
      }
      delegations += 1;
      if (!registered.has(agent)) {
        return { response: `Error: agent "${agent}" is configured on the agents middleware but is not registered on this worker.`, ...label };
      }
      const messages: Message[] = [...forwardedHistory(params.requestMessages, config.historyLength), { role: 'user', content: [{ text: input.data.task }] }];
      if (input.data.background && config.async) {
        const task = await context.tasks.start({ agent, messages: [{ role: 'user', content: [{ text: input.data.task }] }], ...label });
        return {
          taskId: task.taskId,
          status: 'pending',
          response: `Background task ${task.taskId} started for agent "${agent}". Collect its result with ${background!.check} or ${background!.wait}, or stop it with ${background!.abort}.`,
          ...label,
        };
      }
      const outcome = await context.runAgent({ agent, messages });
      if ('error' in outcome) return { response: `Error calling agent "${agent}": ${outcome.error.message}`, ...label };
      return { ...settled(agent, outcome.runId, outcome.result), ...label };
    };

    /** What a finished sub-agent run answers: its text (or why it has none) and its artifacts, merged under `<agent>_<n>`. */
    const settled = (agent: string, runId: string, result: RunResult) => {
      const merged = mergeArtifacts(agent, namespaceOf(agent, runId), result.artifacts);
      return { response: foldResult(agent, result, merged.length), ...(merged.length ? { artifacts: merged } : {}) };
    };

    const entries = config.agents.map((ref) => ({
      agent: ref.name,
      tool: delegationToolName(config.toolPrefix, ref.name),
      description: ref.description ?? (registered.get(ref.name) || 'No description available.'),
      toolDescription: ref.description ?? `Delegates a task to the "${ref.name}" sub-agent.`,
    }));
    const tools: ContributedTool[] = entries.map(({ agent, tool, toolDescription }) => ({
      definition: {
        name: tool,
        description: toolDescription,
        inputSchema: {
          type: 'object',
          properties: {
            task: { type: 'string', description: 'The task, described completely: the sub-agent sees only this.' },
            name: { type: 'string', description: 'A short label for the task, echoed back (never an identifier).' },
            ...(config.async ? { background: { type: 'boolean', description: 'Start the task in the background and get a taskId at once.' } } : {}),
          },
          required: ['task'],
        },
      },
      run: (input, params) => delegate(agent, input, params),
    }));
    const block = subAgentsBlock(entries, background);
    if (background) {
      tools.push(
        ...backgroundTools({
          context,
          agents: config.agents.map((ref) => ref.name),
          names: background,
          delegationTools: new Set(entries.map((entry) => entry.tool)),
          maxWaitSeconds: config.maxWaitSeconds,
          completed: (agent, runId, result) => {
            const row = settled(agent, runId, result);
            if (RESULT_REASONS.has(result.finishReason)) return { status: 'completed', ...row };
            return { status: 'failed', error: row.response };
          },
        }),
      );
    }

    return {
      tools,
      wrapGenerate: (params, next) => next({ ...params, messages: injectSystemText(params.messages, AGENTS_INSTRUCTIONS_MARKER, block) }),
    };
  },
});
