/**
 * Agents (reference: genkit-middleware-exp/agents): delegation to sub-agents. Each
 * configured agent gets a `delegate_to_<agent>` tool; a delegation runs the sub-agent as a
 * child run (a child workflow) and returns its answer, with its artifacts merged into this
 * run's under a namespace. A `<sub-agents>` block in the system prompt lists the tools.
 * Background tasks (`async: true`) and their tools are in background-tasks.ts, what a finished
 * sub-agent run answers in sub-agent-results.ts, the capabilities it asks its run for in
 * capabilities.ts (built by run-agent.ts and task-control.ts; its activities are in activities/).
 * Runs in the workflow: the tools are workflow-local, the sub-agent's work is its own run.
 */
import { log } from '@temporalio/workflow';
import { z } from 'zod';
import type { Message } from '../../core/messages';
import { PROOF_METADATA } from '../../core/proofs';
import { sessionOfRun } from '../../core/session';
import { hasAnswer, parseTaskId, taskIdOf, type TaskReport } from '../../core/tasks';
import { toolAnswer, type ToolAnswer } from '../../core/tool-answer';
import {
  BACKGROUND_TOOLS,
  backgroundTools,
  conversationTasks,
  followConversationTasks,
  launchedResponse,
  type BackgroundToolNames,
  type TaskScope,
} from './background-tasks';
import { defineMiddleware } from '../../middleware/define-middleware';
import { foldResult, mergeArtifacts, namespaceOf, subAgentAnswer, type ArtifactMerge, type MergedArtifact } from './sub-agent-results';
import { injectSystemText } from '../../middleware/system-text';
import type { ContributedTool, MiddlewareContext, ToolCallParams } from '../../middleware/types';
import { OUTSIDE_A_RUN, type AgentsPart } from './run-part';

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
  output?: unknown;
  artifacts?: MergedArtifact[];
  taskId?: string;
  status?: 'pending' | 'completed' | 'failed' | 'aborted';
  name?: string;
}

/** The `<sub-agents>` block: every delegation tool with what its agent does, and how background tasks work. */
export function subAgentsBlock(entries: ReadonlyArray<{ tool: string; description: string }>, background?: BackgroundToolNames, continueTool?: string): string {
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

/** The hint a server-managed task's failure carries: its progress is kept for continue_task. */
const CONTINUE_HINT = (tool: string) =>
  ` The run's progress up to that point is saved; call ${tool} with this taskId to continue it, optionally with instructions.`;

/** One delegation tool: its agent, its name, and what the model and the `<sub-agents>` block say of it. */
interface DelegationEntry {
  agent: string;
  tool: string;
  /** What the `<sub-agents>` block says the agent does. */
  description: string;
  toolDescription: string;
}

/**
 * The Agents middleware in one run: its config and context, what it resolved from them at
 * creation, and its delegation count. The tools' steps take it as their first argument.
 */
interface Delegator extends TaskScope, ArtifactMerge {
  config: ResolvedConfig;
  /** Agents registered on this worker, with their descriptions. */
  registered: Map<string, string>;
  /** Registered agents that keep their own session (server-managed). */
  serverManaged: Set<string>;
  /** One entry per configured agent, in config order. */
  entries: DelegationEntry[];
  /** continue_task's name, when a configured agent may keep a session. */
  continueTool: string | undefined;
  /** The background-task tools' names, with `async: true`. */
  background: BackgroundToolNames | undefined;
  /** Delegations so far, across the runs of a long run's chain (carried through continue-as-new). */
  delegations: number;
  /** Set once the run followed its conversation's earlier tasks (the first run of a chain does; its later runs need not). */
  followed: boolean;
}

/**
 * The names and counts the tools work from: a delegation tool per configured agent;
 * continue_task when any configured agent may keep a session (a server-managed one, or one
 * this worker does not know); the background-task tools with `async: true`.
 */
function createDelegator(config: ResolvedConfig, context: MiddlewareContext<number>, part: AgentsPart): Delegator {
  const registered = new Map(context.agent.directory.map((entry) => [entry.name, entry.description]));
  const serverManaged = new Set(context.agent.directory.filter((entry) => entry.session === 'server').map((entry) => entry.name));
  const continueTool = config.agents.some((ref) => serverManaged.has(ref.name) || !registered.has(ref.name))
    ? sharedToolName(config.toolPrefix, 'continue_task')
    : undefined;
  const background = config.async
    ? {
        check: sharedToolName(config.toolPrefix, BACKGROUND_TOOLS.check),
        wait: sharedToolName(config.toolPrefix, BACKGROUND_TOOLS.wait),
        abort: sharedToolName(config.toolPrefix, BACKGROUND_TOOLS.abort),
      }
    : undefined;
  const entries = config.agents.map((ref) => ({
    agent: ref.name,
    tool: delegationToolName(config.toolPrefix, ref.name),
    description: ref.description ?? (registered.get(ref.name) || 'No description available.'),
    toolDescription: ref.description ?? `Delegates a task to the "${ref.name}" sub-agent.`,
  }));
  return {
    config,
    context,
    part,
    artifactStrategy: config.artifactStrategy,
    agents: config.agents.map((ref) => ref.name),
    registered,
    serverManaged,
    entries,
    continueTool,
    background,
    // Results of these tools carry the task ids this conversation launched.
    delegationTools: new Set([...entries.map((entry) => entry.tool), ...(continueTool ? [continueTool] : [])]),
    delegations: context.carried ?? 0,
    followed: context.carried !== undefined,
  };
}

/** The answer to a delegation past `maxDelegations` (0 = no limit), or undefined while there is room. */
function limitReached({ config, delegations }: Delegator): string | undefined {
  if (config.maxDelegations === 0 || delegations < config.maxDelegations) return undefined;
  return `Delegation limit reached (${config.maxDelegations}). Finish the task with what you have gathered so far.`;
}

/**
 * A delegation: a well-formed one counts against `maxDelegations` (even to an agent this worker
 * does not know). A server-managed agent runs in a session of its own with the task only;
 * `background: true` (with `async`) starts a task and answers with its id at once; otherwise
 * the sub-agent runs as a child run, given the forwarded history and the task, and this waits
 * for its answer.
 */
async function delegate(delegator: Delegator, agent: string, rawInput: unknown, params: ToolCallParams): Promise<DelegationOutput> {
  const { config, part } = delegator;
  const input = DelegationInputSchema.safeParse(rawInput);
  if (!input.success) return { response: `Error: give the task to delegate as a non-empty "task" string.` };
  const label = input.data.name !== undefined ? { name: input.data.name } : {};
  const limit = limitReached(delegator);
  if (limit) {
    log.warn('delegation limit reached', { agent, maxDelegations: config.maxDelegations });
    return { response: limit, ...label };
  }
  delegator.delegations += 1;
  if (!delegator.registered.has(agent)) {
    return { response: `Error: agent "${agent}" is configured on the agents middleware but is not registered on this worker.`, ...label };
  }
  const task: Message = { role: 'user', content: [{ text: input.data.task }] };
  const inBackground = input.data.background === true && config.async;
  if (delegator.serverManaged.has(agent)) return { ...(await sessionRun(delegator, agent, { messages: [task], detach: inBackground }, label.name)), ...label };
  if (inBackground) {
    const started = await part.tasks.start({ agent, messages: [task], ...label });
    return { taskId: started.taskId, status: 'pending', response: launchedResponse(delegator.background!, agent, started.taskId), ...label };
  }
  // History goes to client-managed sub-agents only; a server-managed one keeps its own.
  const outcome = await part.runAgent({ agent, messages: [...forwardedHistory(params.requestMessages, config.historyLength), task] });
  if ('error' in outcome) return { response: `Error calling agent "${agent}": ${outcome.error.message}`, ...label };
  return { ...subAgentAnswer(delegator, agent, outcome.runId, outcome.result), ...label };
}

const ContinueInputSchema = z.object({ taskId: z.string(), instructions: z.string().optional(), background: z.boolean().optional() }).loose();

/**
 * Why a task cannot be continued, from where its run stands (undefined: it can). A task still
 * running or winding down, or a completed one given no new instructions, is refused without
 * spending a delegation (`refund`); a task with no record spends it.
 */
function continueRefusal(
  { continueTool }: Delegator,
  taskId: string,
  report: TaskReport | undefined,
  instructions: string | undefined,
): { response: string; refund: boolean } | undefined {
  switch (report?.status) {
    case 'pending':
      return { refund: true, response: `Error: task ${taskId} is still running; only a settled task can be continued. Wait for it first.` };
    case 'aborting':
      return { refund: true, response: `Error: task ${taskId} is winding down after an abort. Retry this taskId once it settles.` };
    case 'unknown':
    case undefined:
      return { refund: false, response: `Error: no record of task ${taskId} exists. Delegate the task again.` };
    case 'completed':
      if (!instructions && hasAnswer(report.result?.finishReason ?? 'stop')) {
        return { refund: true, response: `Error: task ${taskId} already completed. Call ${continueTool} again with instructions for what to do next.` };
      }
  }
  return undefined;
}

/**
 * continue_task: a settled task of a server-managed sub-agent that this conversation launched
 * goes on from its snapshot, as a new task (a failed or aborted one from where it stopped, a
 * completed one with new instructions). It counts as a delegation.
 */
async function continueTask(delegator: Delegator, rawInput: unknown, params: ToolCallParams): Promise<DelegationOutput> {
  const input = ContinueInputSchema.safeParse(rawInput);
  if (!input.success) return { response: 'Error: give the "taskId" of the task to continue.' };
  const { taskId, instructions } = input.data;
  const parsed = parseTaskId(taskId, delegator.agents);
  if (!parsed) return { response: `Error: task ID "${taskId}" does not match any configured agent (expected "<agent>:<runId>").` };
  const known = await conversationTasks(delegator, params.requestMessages);
  if (!known.has(taskId)) return { response: 'Error: this conversation did not launch this task, so it cannot be continued from here.' };
  const label = known.get(taskId) !== undefined ? { name: known.get(taskId)! } : {};
  const limit = limitReached(delegator);
  if (limit) return { response: limit, ...label };
  delegator.delegations += 1;
  const session = sessionOfRun(parsed.runId, parsed.agent);
  if (!delegator.serverManaged.has(parsed.agent) || !session) {
    return { response: `Error: agent "${parsed.agent}" does not keep a session, so its tasks cannot be continued. Delegate the task again.`, ...label };
  }
  const [report] = await delegator.part.tasks.inspect([parsed.runId]);
  const refusal = continueRefusal(delegator, taskId, report, instructions);
  if (refusal) {
    if (refusal.refund) delegator.delegations -= 1;
    return { response: refusal.response, ...label };
  }
  const message: Message = { role: 'user', content: [{ text: instructions ?? 'Continue the task from where it stopped.' }] };
  const detach = input.data.background === true && delegator.config.async;
  return {
    ...(await sessionRun(delegator, parsed.agent, { messages: [message], detach, fromRunId: parsed.runId, sessionId: session.sessionId }, label.name)),
    ...label,
  };
}

/**
 * A run in a server-managed sub-agent's session: a detached one answers with its pending
 * task; a finished one with its answer and task id, its artifacts merged under its run.
 * A run without an answer failed (or was aborted); its progress is kept for continue_task.
 */
async function sessionRun(
  delegator: Delegator,
  agent: string,
  options: { messages: Message[]; detach: boolean; fromRunId?: string; sessionId?: string },
  name?: string,
): Promise<DelegationOutput> {
  const outcome = await delegator.part.invokeSession({ agent, ...options, ...(name !== undefined ? { name } : {}) });
  if ('error' in outcome) return { response: `Error calling agent "${agent}": ${outcome.error.message}` };
  const { output } = outcome;
  const taskId = taskIdOf(agent, output.runId);
  if (output.status === 'pending') return { taskId, status: 'pending', response: launchedResponse(delegator.background!, agent, taskId) };
  const merged = mergeArtifacts(delegator, agent, namespaceOf(agent, output.runId), output.artifacts);
  if (output.status === 'completed' && hasAnswer(output.finishReason)) {
    return {
      taskId,
      status: 'completed',
      response: output.text || foldResult(agent, { text: '', finishReason: 'stop' }, merged.length),
      ...(output.output !== undefined ? { output: output.output } : {}),
      ...(merged.length ? { artifacts: merged } : {}),
    };
  }
  const why = output.error
    ? output.error.message
    : `its run ended as "${output.finishReason}" without completing the task; its last message was: ${output.text}.`;
  return {
    taskId,
    status: output.status === 'aborted' ? 'aborted' : 'failed',
    response: `Error calling agent "${agent}": ${why}${delegator.continueTool ? CONTINUE_HINT(delegator.continueTool) : ''}`,
  };
}

/** A delegation's answer; one that hands out a task id carries the proof that this run did, in its response's metadata. */
async function withTaskProof({ tasks }: AgentsPart, output: DelegationOutput): Promise<DelegationOutput | ToolAnswer> {
  if (output.taskId === undefined) return output;
  const proof = (await tasks.prove([output.taskId]))[output.taskId];
  return proof === undefined ? output : toolAnswer(output, { [PROOF_METADATA.task]: proof });
}

/** The delegation tool of one configured agent (`background` offered with `async`). */
function delegationTool(delegator: Delegator, { agent, tool, toolDescription }: DelegationEntry): ContributedTool {
  return {
    definition: {
      name: tool,
      description: toolDescription,
      inputSchema: {
        type: 'object',
        properties: {
          task: { type: 'string', description: 'The task, described completely: the sub-agent sees only this.' },
          name: { type: 'string', description: 'A short label for the task, echoed back (never an identifier).' },
          ...(delegator.config.async ? { background: { type: 'boolean', description: 'Start the task in the background and get a taskId at once.' } } : {}),
        },
        required: ['task'],
      },
    },
    run: async (input, params) => withTaskProof(delegator.part, await delegate(delegator, agent, input, params)),
  };
}

/** The continue_task tool (`background` offered with `async`). */
function continueTaskTool(delegator: Delegator, name: string): ContributedTool {
  return {
    definition: {
      name,
      description: 'Continues a settled task of a sub-agent that keeps its own session (failed, aborted, or completed with new instructions).',
      inputSchema: {
        type: 'object',
        properties: {
          taskId: { type: 'string', description: 'The taskId of the task to continue.' },
          instructions: { type: 'string', description: 'What to do next; omit to retry where it stopped.' },
          ...(delegator.config.async ? { background: { type: 'boolean', description: 'Continue it in the background.' } } : {}),
        },
        required: ['taskId'],
      },
    },
    run: async (input, params) => withTaskProof(delegator.part, await continueTask(delegator, input, params)),
  };
}

/** Every tool of the middleware, in the order the model sees them: the delegation tools, the background-task tools, continue_task. */
function agentsTools(delegator: Delegator): ContributedTool[] {
  const { config, context, background, continueTool } = delegator;
  return [
    ...delegator.entries.map((entry) => delegationTool(delegator, entry)),
    ...(background
      ? backgroundTools({
          context,
          part: delegator.part,
          agents: delegator.agents,
          delegationTools: delegator.delegationTools,
          names: background,
          maxWaitSeconds: config.maxWaitSeconds,
          artifactStrategy: delegator.artifactStrategy,
        })
      : []),
    ...(continueTool ? [continueTaskTool(delegator, continueTool)] : []),
  ];
}

/** Agents: `use: [agents({ agents: ['researcher', { name: 'coder', description: 'Writes code.' }] })]` */
export const agents = defineMiddleware({
  name: 'agents',
  description: 'Delegates tasks to sub-agents, each run as a child run of its own.',
  configSchema: AgentsConfigSchema,
  // The delegations made so far in the run's chain (its presence: a run that went on from an earlier one).
  carrySchema: z.number().int().nonnegative(),
  // The loop lends the middleware its run's part (src/features/agents/feature.ts); outside a run there is none.
  create(config: ResolvedConfig, context: MiddlewareContext<number>, part: AgentsPart = OUTSIDE_A_RUN) {
    const delegator = createDelegator(config, context, part);
    const block = subAgentsBlock(delegator.entries, delegator.background, delegator.continueTool);
    return {
      carry: () => delegator.delegations,
      tools: agentsTools(delegator),
      wrapGenerate: async (params, next) => {
        // The first run of a chain follows the tasks earlier runs of the conversation launched that still run.
        if (!delegator.followed && delegator.background) {
          delegator.followed = true;
          await followConversationTasks(delegator, params.messages);
        }
        return next({ ...params, messages: injectSystemText(params.messages, AGENTS_INSTRUCTIONS_MARKER, block) });
      },
    };
  },
});
