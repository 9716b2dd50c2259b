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
import { taskIdOf } from '../core/tasks';
import { sessionOfTurn } from '../core/session';
import { BACKGROUND_TOOLS, backgroundTools, conversationTasks, launchedInConversation, parseTaskId } from './agents-tasks';
import { injectSystemText } from './system-text';
import type { ContributedTool, MiddlewareContext, ToolCallParams } from './types';
import { PROOF_METADATA } from '../core/proofs';
import { toolAnswer, type ToolAnswer } from '../core/tool-answer';

/** Metadata key tagging the `<sub-agents>` block of the system prompt (the reference's). */
export const AGENTS_INSTRUCTIONS_MARKER = 'agents-instructions';

/** The default prefix of delegation tools (`delegate_to_<agent>`). */
export const DEFAULT_TOOL_PREFIX = 'delegate_to';

/** A sub-agent: its registered name, and a description that overrides the registered one. */
const AgentRefSchema = z.union([
  z
    .string()
    .min(1, 'an agent name must not be empty')
    .transform((name) => ({ name, description: undefined as string | undefined })),
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
  status?: 'pending' | 'completed' | 'failed' | 'aborted';
  name?: string;
}

/** The `<sub-agents>` block: every delegation tool with what its agent does, and how background tasks work. */
export function subAgentsBlock(
  entries: ReadonlyArray<{ tool: string; description: string }>,
  background?: { check: string; wait: string; abort: string },
  continueTool?: string,
): string {
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
    ...(continueTool
      ? [
          '',
          `A task of a sub-agent that keeps its own session comes back with a taskId. ${continueTool} continues such a task once it has settled: a failed or aborted one from where it stopped, a completed one with new instructions. An interrupted task cannot be continued.`,
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

/**
 * The namespace of a sub-agent run's artifacts: `<agent>_<8 hex digits>` from the run's id
 * (FNV-1a), unique across the runs and turns of a conversation, so a later delegation never
 * replaces an earlier one's artifacts.
 */
export function namespaceOf(agent: string, runId: string): string {
  let hash = 0x811c9dc5;
  for (let index = 0; index < runId.length; index++) {
    hash ^= runId.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return `${agent}_${hash.toString(16).padStart(8, '0')}`;
}

/** The hint a server-managed task's failure carries: its progress is kept for continue_task. */
const CONTINUE_HINT = (tool: string) =>
  ` The run's progress up to that point is saved; call ${tool} with this taskId to continue it, optionally with instructions.`;

/** The answer a finished sub-agent run gives the delegating model. */
function foldResult(agent: string, result: RunResult, artifacts: number): string {
  const text = result.text;
  if (!RESULT_REASONS.has(result.finishReason)) {
    return `Error calling agent "${agent}": its run ended as "${result.finishReason}" without completing the task; its last message was: ${text}.`;
  }
  if (text) return text;
  if (artifacts === 0) return 'The task completed, but the agent gave no final message and produced no artifacts.';
  return artifacts === 1
    ? 'The task completed without a final message; its result is in the one artifact it produced.'
    : `The task completed without a final message; its result is in the ${artifacts} artifacts it produced.`;
}

/** Agents: `use: [agents({ agents: ['researcher', { name: 'coder', description: 'Writes code.' }] })]` */
export const agents = defineMiddleware({
  name: 'agents',
  description: 'Delegates tasks to sub-agents, each run as a child run of its own.',
  configSchema: AgentsConfigSchema,
  create(config: ResolvedConfig, context: MiddlewareContext) {
    const registered = new Map(context.agent.directory.map((entry) => [entry.name, entry.description]));
    const serverManaged = new Set(context.agent.directory.filter((entry) => entry.session === 'server').map((entry) => entry.name));
    // continue_task exists when any configured agent may keep a session (an unknown one may).
    const continueTool = config.agents.some((ref) => serverManaged.has(ref.name) || !registered.has(ref.name))
      ? sharedToolName(config.toolPrefix, 'continue_task')
      : undefined;
    // Delegations count across the runs of a long run's chain.
    let delegations = typeof context.carried === 'number' ? context.carried : 0;
    const background = config.async
      ? {
          check: sharedToolName(config.toolPrefix, BACKGROUND_TOOLS.check),
          wait: sharedToolName(config.toolPrefix, BACKGROUND_TOOLS.wait),
          abort: sharedToolName(config.toolPrefix, BACKGROUND_TOOLS.abort),
        }
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
      const task: Message = { role: 'user', content: [{ text: input.data.task }] };
      const inBackground = input.data.background === true && config.async;
      if (serverManaged.has(agent)) return { ...(await sessionTurn(agent, { messages: [task], detach: inBackground }, label.name)), ...label };
      if (inBackground) {
        const started = await context.tasks.start({ agent, messages: [task], ...label });
        return { taskId: started.taskId, status: 'pending', response: launched(agent, started.taskId), ...label };
      }
      // History goes to client-managed sub-agents only; a server-managed one keeps its own.
      const outcome = await context.runAgent({ agent, messages: [...forwardedHistory(params.requestMessages, config.historyLength), task] });
      if ('error' in outcome) return { response: `Error calling agent "${agent}": ${outcome.error.message}`, ...label };
      return { ...settled(agent, outcome.runId, outcome.result), ...label };
    };

    const ContinueInputSchema = z.object({ taskId: z.string(), instructions: z.string().optional(), background: z.boolean().optional() }).loose();

    /** continue_task: a settled task of a server-managed sub-agent goes on from its snapshot, as a new task. */
    const continueTask = async (rawInput: unknown, params: ToolCallParams): Promise<DelegationOutput> => {
      const input = ContinueInputSchema.safeParse(rawInput);
      if (!input.success) return { response: 'Error: give the "taskId" of the task to continue.' };
      const { taskId, instructions } = input.data;
      const parsed = parseTaskId(
        taskId,
        config.agents.map((ref) => ref.name),
      );
      if (!parsed) return { response: `Error: task ID "${taskId}" does not match any configured agent (expected "<agent>:<runId>").` };
      const known = await conversationTasks(context, params.requestMessages, delegationToolNames);
      if (!known.has(taskId)) return { response: 'Error: this conversation did not launch this task, so it cannot be continued from here.' };
      const label = known.get(taskId) !== undefined ? { name: known.get(taskId)! } : {};
      if (config.maxDelegations > 0 && delegations >= config.maxDelegations) {
        return { response: `Delegation limit reached (${config.maxDelegations}). Finish the task with what you have gathered so far.`, ...label };
      }
      delegations += 1;
      const session = sessionOfTurn(parsed.runId, parsed.agent);
      if (!serverManaged.has(parsed.agent) || !session) {
        return { response: `Error: agent "${parsed.agent}" does not keep a session, so its tasks cannot be continued. Delegate the task again.`, ...label };
      }
      const refund = (response: string): DelegationOutput => {
        delegations -= 1;
        return { response, ...label };
      };
      const [report] = await context.tasks.inspect([parsed.runId]);
      switch (report?.status) {
        case 'pending':
          return refund(`Error: task ${taskId} is still running; only a settled task can be continued. Wait for it first.`);
        case 'aborting':
          return refund(`Error: task ${taskId} is winding down after an abort. Retry this taskId once it settles.`);
        case 'unknown':
        case undefined:
          return { response: `Error: no record of task ${taskId} exists. Delegate the task again.`, ...label };
        case 'completed':
          if (!instructions && RESULT_REASONS.has(report.result?.finishReason ?? 'stop')) {
            return refund(`Error: task ${taskId} already completed. Call ${continueTool} again with instructions for what to do next.`);
          }
      }
      const message: Message = { role: 'user', content: [{ text: instructions ?? 'Continue the task from where it stopped.' }] };
      const detach = input.data.background === true && config.async;
      return {
        ...(await sessionTurn(parsed.agent, { messages: [message], detach, fromRunId: parsed.runId, sessionId: session.sessionId }, label.name)),
        ...label,
      };
    };

    const launched = (agent: string, taskId: string) =>
      `Background task ${taskId} started for agent "${agent}". Collect its result with ${background!.check} or ${background!.wait}, or stop it with ${background!.abort}.`;

    /** A turn of a server-managed sub-agent's session: its answer and task id, or its pending task. */
    const sessionTurn = async (
      agent: string,
      options: { messages: Message[]; detach: boolean; fromRunId?: string; sessionId?: string },
      name?: string,
    ): Promise<DelegationOutput> => {
      const outcome = await context.invokeSession({ agent, ...options, ...(name !== undefined ? { name } : {}) });
      if ('error' in outcome) return { response: `Error calling agent "${agent}": ${outcome.error.message}` };
      const { output } = outcome;
      const taskId = taskIdOf(agent, output.runId);
      if (output.status === 'pending') return { taskId, status: 'pending', response: launched(agent, taskId) };
      const merged = mergeArtifacts(agent, namespaceOf(agent, output.runId), output.artifacts);
      if (output.status === 'completed' && RESULT_REASONS.has(output.finishReason)) {
        return {
          taskId,
          status: 'completed',
          response: output.text || foldResult(agent, { text: '', finishReason: 'stop' } as RunResult, merged.length),
          ...(merged.length ? { artifacts: merged } : {}),
        };
      }
      const why = output.error
        ? output.error.message
        : `its run ended as "${output.finishReason}" without completing the task; its last message was: ${output.text}.`;
      return {
        taskId,
        status: output.status === 'aborted' ? 'aborted' : 'failed',
        response: `Error calling agent "${agent}": ${why}${continueTool ? CONTINUE_HINT(continueTool) : ''}`,
      };
    };

    /** What a finished sub-agent run answers: its text (or why it has none) and its artifacts, merged under `<agent>_<n>`. */
    const settled = (agent: string, runId: string, result: RunResult) => {
      const merged = mergeArtifacts(agent, namespaceOf(agent, runId), result.artifacts);
      return { response: foldResult(agent, result, merged.length), ...(merged.length ? { artifacts: merged } : {}) };
    };

    /** A delegation's answer; one that hands out a task id carries the proof that this run did, in its response's metadata. */
    const withTaskProof = async (output: DelegationOutput): Promise<DelegationOutput | ToolAnswer> => {
      if (output.taskId === undefined) return output;
      const proof = (await context.tasks.prove([output.taskId]))[output.taskId];
      return proof === undefined ? output : toolAnswer(output, { [PROOF_METADATA.task]: proof });
    };

    const entries = config.agents.map((ref) => ({
      agent: ref.name,
      tool: delegationToolName(config.toolPrefix, ref.name),
      description: ref.description ?? (registered.get(ref.name) || 'No description available.'),
      toolDescription: ref.description ?? `Delegates a task to the "${ref.name}" sub-agent.`,
    }));
    // Results of these tools carry the task ids this conversation launched.
    const delegationToolNames = new Set([...entries.map((entry) => entry.tool), ...(continueTool ? [continueTool] : [])]);
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
      run: async (input, params) => withTaskProof(await delegate(agent, input, params)),
    }));
    const block = subAgentsBlock(entries, background, continueTool);
    if (background) {
      tools.push(
        ...backgroundTools({
          context,
          agents: config.agents.map((ref) => ref.name),
          names: background,
          delegationTools: delegationToolNames,
          maxWaitSeconds: config.maxWaitSeconds,
          completed: (agent, runId, result) => {
            const row = settled(agent, runId, result);
            if (RESULT_REASONS.has(result.finishReason)) return { status: 'completed', ...row };
            return { status: 'failed', error: row.response };
          },
        }),
      );
    }

    if (continueTool) {
      tools.push({
        definition: {
          name: continueTool,
          description: 'Continues a settled task of a sub-agent that keeps its own session (failed, aborted, or completed with new instructions).',
          inputSchema: {
            type: 'object',
            properties: {
              taskId: { type: 'string', description: 'The taskId of the task to continue.' },
              instructions: { type: 'string', description: 'What to do next; omit to retry where it stopped.' },
              ...(config.async ? { background: { type: 'boolean', description: 'Continue it in the background.' } } : {}),
            },
            required: ['taskId'],
          },
        },
        run: async (input, params) => withTaskProof(await continueTask(input, params)),
      });
    }
    // The first run of a chain follows the tasks earlier runs of the conversation launched that
    // still run: their holds show in this run's status and are decided here.
    let followed = context.carried !== undefined;
    const followConversationTasks = async (messages: readonly Message[]) => {
      followed = true;
      const names = config.agents.map((ref) => ref.name);
      const claims = [...launchedInConversation(messages, delegationToolNames)].flatMap(([taskId, { proof }]) => {
        const parsed = parseTaskId(taskId, names);
        return parsed ? [{ taskId, ...parsed, ...(proof !== undefined ? { proof } : {}) }] : [];
      });
      if (claims.length) await context.tasks.follow(claims);
    };
    return {
      carry: () => delegations,
      tools,
      wrapGenerate: async (params, next) => {
        if (!followed && background) await followConversationTasks(params.messages);
        return next({ ...params, messages: injectSystemText(params.messages, AGENTS_INSTRUCTIONS_MARKER, block) });
      },
    };
  },
});
