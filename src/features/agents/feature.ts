/**
 * Agents as a built-in: its middleware, and its part of each run (sub-agent runs, session runs
 * and background tasks, built from the run's services by run-agent.ts and task-control.ts, each
 * the first time the middleware uses it), lent to the middleware where it is created. Pure:
 * runs in the workflow.
 */
import { builtin, once } from '../feature';
import { agents } from './agents';
import type { AgentsPart } from './run-part';
import { AgentsStateSchema, agentRunner, sessionInvoker } from './run-agent';
import { taskControl } from './task-control';

/** Agents (reference: genkit-middleware-exp/agents). */
export const agentsFeature = builtin(agents, 'genkit-middleware-exp/agents', {
  state: { schema: AgentsStateSchema },
  run: (services) => {
    const runner = once(() => agentRunner(services));
    const sessions = once(() => sessionInvoker(services));
    const tasks = once(() => taskControl(services));
    const part: AgentsPart = {
      runAgent: (options) => runner()(options),
      invokeSession: (options) => sessions()(options),
      get tasks() {
        return tasks();
      },
    };
    return { part, status: () => ({ tasks: services.state.tasks }) };
  },
});
