/**
 * The `resolveAgent` activity: the agent's spec as this worker registered it (its model, tools
 * as the model sees them, middleware, activity timeouts, which calls are local). Recorded in
 * history, so a changed definition never breaks a run under way. Node side.
 */
import { ApproverRulesSchema } from '../core/approvers';
import type { IndexedAttributes, WorkerScope } from './worker-scope';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import type { ToolDefinition } from '../core/messages';
import type { AgentSpec, ResolveAgentInput } from '../core/run';
import { modelTaskQueue } from '../core/rate-limit';
import { DEFAULT_FAIRNESS } from '../core/fairness';
import { toInputJsonSchema } from '../core/zod-schema';
import type { Agent, Tool } from '../define';
import type { Registry } from '../registry';
import { NotRegisteredError } from './not-registered';
import { temporal } from '@temporalio/proto';
import { log } from '@temporalio/activity';
import { KEEL_AGENT, KEEL_FORK_OF, KEEL_OWNER, KEEL_SEARCH_ATTRIBUTES, KEEL_STATUS, KEEL_TENANT, registerCommand } from '../core/search-attributes';

/** JSON schema of a zod schema, as the model sees it. */
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const json = toInputJsonSchema(schema);
  delete json.$schema;
  return json;
}

function describeTool(tool: Tool): ToolDefinition {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: jsonSchemaOf(tool.input),
    ...(tool.output ? { outputSchema: jsonSchemaOf(tool.output) } : {}),
  };
}

/**
 * Which of keel's search attributes the client's namespace has (as Keyword): `indexed` when it
 * has KeelAgent and KeelStatus (runs keep them current), `forks` when it also has KeelForkOf (a
 * fork records its source there; a namespace set up before forks lacks it, and a run never
 * upserts an attribute the namespace lacks: Temporal would fail its task). When any is missing,
 * says once how to register them. A lookup that fails (no permission for the operator service)
 * counts as absent.
 */
export async function hasSearchAttributes(client: Client): Promise<IndexedAttributes> {
  const namespace = client.options.namespace;
  let registered = (_name: string) => false;
  try {
    const { customAttributes } = await client.connection.operatorService.listSearchAttributes({ namespace });
    const Keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    registered = (name) => customAttributes?.[name] === Keyword;
  } catch {
    // Fall through: treated as not registered.
  }
  const indexed = registered(KEEL_AGENT.name) && registered(KEEL_STATUS.name);
  const found = {
    indexed,
    forks: indexed && registered(KEEL_FORK_OF.name),
    principals: indexed && registered(KEEL_TENANT.name) && registered(KEEL_OWNER.name),
  };
  if (!KEEL_SEARCH_ATTRIBUTES.every(registered)) {
    const lost = indexed
      ? [...(found.forks ? [] : ['forks by their source']), ...(found.principals ? [] : ['runs by tenant or owner'])].join(' and ')
      : 'runs by agent or status';
    log.warn(
      `keel: the search attributes ${KEEL_SEARCH_ATTRIBUTES.filter((name) => !registered(name)).join(', ')} are not registered in namespace "${namespace}", so ${lost} cannot be listed; register them with: npx keel namespace setup (this worker's config), or ${registerCommand(namespace)}`,
    );
  }
  return found;
}

/**
 * Which calls of a run of `agent` are local activities: every registered model the agent's
 * `local.models` picks (or, without it, each model that says `local`), and each of its tools
 * its `local.tools` picks (or that says `local` itself).
 */
function localCallsOf(registry: Registry, agent: Agent, tools: ToolDefinition[]): { localModels?: string[]; localTools?: string[] } {
  const models = [...registry.models.values()].filter((model) => agent.local?.models ?? model.local === true).map((model) => model.name);
  const byName = new Map(
    agent.tools.map((entry) => [typeof entry === 'string' ? entry : entry.name, typeof entry === 'string' ? registry.tools.get(entry) : entry]),
  );
  const choice = agent.local?.tools;
  const local = tools
    .map((tool) => tool.name)
    .filter((name) => (choice === undefined ? byName.get(name)?.local === true : typeof choice === 'boolean' ? choice : choice.includes(name)))
    // A call that must happen once stays a regular activity, whose lost attempts Temporal records.
    .filter((name) => (byName.get(name) ?? registry.tools.get(name))?.effects !== 'once');
  return { ...(models.length ? { localModels: models.sort() } : {}), ...(local.length ? { localTools: local.sort() } : {}) };
}

/** The task queue of each rate-limited model's calls, beside the queue the agent was resolved on (every keel worker of it polls them). */
function modelQueuesOf(registry: Registry, taskQueue: string): { modelQueues?: Record<string, string> } {
  const limited = [...registry.models.values()].filter((model) => model.rateLimit).map((model) => model.name);
  return limited.length ? { modelQueues: Object.fromEntries(limited.sort().map((name) => [name, modelTaskQueue(taskQueue, name)])) } : {};
}

/**
 * What the spec says of the namespace's search attributes: `searchAttributes` (KeelAgent and
 * KeelStatus), `forkAttribute` (KeelForkOf too), `principalAttributes` (KeelTenant and KeelOwner too).
 */
async function indexing(scope: WorkerScope): Promise<Pick<AgentSpec, 'searchAttributes' | 'forkAttribute' | 'principalAttributes'>> {
  const { indexed, forks, principals } = await scope.searchAttributes();
  return { searchAttributes: indexed, ...(forks ? { forkAttribute: true } : {}), ...(principals ? { principalAttributes: true } : {}) };
}

/** The agent's spec as registered on this worker (the `resolveAgent` activity). */
export function resolveAgent(scope: WorkerScope, { agent: name, refusedBefore }: ResolveAgentInput): Promise<AgentSpec> {
  const { activity, registry, config, inlineLimit } = scope;
  return activity(async () => {
    const agent = registry.agents.get(name);
    if (!agent) {
      const known = [...registry.agents.keys()].sort();
      throw new NotRegisteredError(`agent "${name}" is not registered on this worker; registered agents: ${known.join(', ') || '(none)'}`, {
        kind: 'agent',
        name,
        has: known,
      });
    }
    if (!registry.models.has(agent.model)) {
      const known = [...registry.models.keys()].sort();
      throw new NotRegisteredError(
        `model "${agent.model}" of agent "${name}" is not registered; registered models: ${known.join(', ') || '(none)'}`,
        { kind: 'model', name: agent.model, has: known },
        {
          modelName: agent.model,
        },
      );
    }
    const tools = agent.tools.map((entry) => {
      const tool = typeof entry === 'string' ? registry.tools.get(entry) : entry;
      if (!tool) {
        throw new NotRegisteredError(
          `tool "${String(entry)}" of agent "${name}" is not registered; registered tools: ${[...registry.tools.keys()].sort().join(', ') || '(none)'}`,
          { kind: 'tool', name: String(entry), has: [...registry.tools.keys()].sort() },
          {
            toolName: String(entry),
          },
        );
      }
      return describeTool(tool);
    });
    return {
      name: agent.name,
      description: agent.description,
      model: agent.model,
      ...(agent.system ? { system: agent.system } : {}),
      ...(agent.config ? { config: agent.config } : {}),
      tools,
      use: agent.use.map((ref) => ({ name: ref.name, config: ref.config ?? {} })),
      maxTurns: agent.maxTurns,
      activities: config.activities,
      models: [...registry.models.keys()].sort(),
      directory: [...registry.agents.values()]
        .map((entry) => ({ name: entry.name, description: entry.description, session: entry.session }))
        .sort((a, b) => a.name.localeCompare(b.name)),
      session: agent.session,
      ...(agent.output ? { output: agent.output } : {}),
      ...(agent.approvers ? { approvers: ApproverRulesSchema.parse(agent.approvers) } : {}),
      ...(await indexing(scope)),
      ...(inlineLimit !== undefined ? { inlinePayloadLimit: inlineLimit } : {}),
      ...(config.notify?.length ? { notify: config.notify.length } : {}),
      ...modelQueuesOf(registry, Context.current().info.taskQueue),
      backgroundPriority: (config.fairness ?? DEFAULT_FAIRNESS).priority.background,
      ...localCallsOf(registry, agent, tools),
    };
  }, refusedBefore);
}
