/**
 * Agents as a built-in: its middleware, and the capabilities its run provides it (sub-agent
 * runs, session runs and background tasks, built from the run's services by run-agent.ts and
 * task-control.ts). Pure: runs in the workflow.
 */
import { provide } from '../../middleware/run-capability';
import { builtin } from '../feature';
import { agents } from './agents';
import { backgroundTasks, sessionRuns, subAgentRuns } from './capabilities';
import { AgentsStateSchema, agentRunner, sessionInvoker } from './run-agent';
import { taskControl } from './task-control';

/** Agents (reference: genkit-middleware-exp/agents). */
export const agentsFeature = builtin(agents, 'genkit-middleware-exp/agents', {
  state: { schema: AgentsStateSchema },
  run: (services) => ({
    provides: [
      provide(subAgentRuns, () => agentRunner(services)),
      provide(sessionRuns, () => sessionInvoker(services)),
      provide(backgroundTasks, () => taskControl(services)),
    ],
    status: () => ({ tasks: services.state.tasks }),
  }),
});
