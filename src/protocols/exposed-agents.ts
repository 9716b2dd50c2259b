/**
 * The agents keel serves to other agents (`serve.agents`, docs/mcp.md and docs/a2a.md), as the
 * config's modules and entries define them, for MCP and A2A alike. Node side.
 */
import type { KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import { loadRegistry } from '../worker/load-registry';

/** An agent as the protocols show it. */
export interface ExposedAgent {
  name: string;
  description: string;
  /** `server`: a message takes a session id (an MCP argument, an A2A context), and each is a run of that session. */
  session: 'client' | 'server';
  /** JSON Schema of its structured answer, when it has one and it is an object. */
  output?: Record<string, unknown>;
}

/**
 * The agents `serve` names (`['*']`: all of them), loaded from the config (no MCP tool servers are
 * connected for this). An agent named there that is not defined is a config error naming it.
 */
export async function loadExposedAgents(config: KeelConfig, serve: KeelConfig['serve'] = config.serve): Promise<ExposedAgent[]> {
  if (!serve.agents.length) return [];
  const registry = await loadRegistry({ ...config, mcpServers: [] });
  const names = serve.agents.includes('*') ? [...registry.agents.keys()].sort() : serve.agents;
  return names.map((name, index) => {
    const agent = registry.agents.get(name);
    if (!agent) {
      const known = [...registry.agents.keys()].sort().join(', ') || '(none)';
      throw new KeelError('INVALID_ARGUMENT', `serve.agents[${index}]: no agent "${name}" is defined; defined: ${known}`);
    }
    // Structured content (MCP's, A2A's data part) is an object: an answer of another shape is given as text only.
    const output = agent.output?.schema.type === 'object' ? agent.output.schema : undefined;
    return { name, description: agent.description, session: agent.session, ...(output ? { output } : {}) };
  });
}
