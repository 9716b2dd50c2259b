/**
 * The check a fork passes before it starts (docs/fork.md): a worker of the task queue has the
 * fork's agent and model, and each tool result the fork changes matches its tool's output
 * schema there. A workflow of its own so that bad input starts no run: `keel fork` and
 * `RunHandle.fork` wait for it and start the fork only when it passes. Runs in the workflow:
 * deterministic, no I/O.
 */
import { setWorkflowOptions } from '@temporalio/workflow';
import { proxyDoor, resolveAgentDoor, validateToolOutputDoor } from '../engine/activities';
import { KeelError, toApplicationFailure } from '../core/errors';
import type { ForkCheckInput } from '../core/fork';
import { RESOLVE_AGENT_OPTIONS, asKeelError } from '../engine/activity-errors';
import { sessionVersioningOptions } from '../engine/versioning';

/** A worker that lacks the agent refuses it retryably: a few tries, so a fleet mid-deploy gets a chance and a refusal comes back in seconds. */
const resolveAgent = proxyDoor(resolveAgentDoor, {
  ...RESOLVE_AGENT_OPTIONS,
  scheduleToCloseTimeout: '20 seconds',
  retry: { ...RESOLVE_AGENT_OPTIONS.retry, maximumAttempts: 3 },
});
const validateToolOutput = proxyDoor(validateToolOutputDoor, {
  local: true,
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['NOT_FOUND', 'INVALID_ARGUMENT', 'INTERNAL'] },
});

/** Passes, or fails INVALID_ARGUMENT saying what the fork asks for that the workers do not have or take. */
export async function keelForkCheck({ agent: name, model, toolResults }: ForkCheckInput): Promise<void> {
  try {
    const agent = await resolveAgent({ agent: name }).catch((error: unknown) => {
      throw new KeelError('INVALID_ARGUMENT', asKeelError(error, `resolving agent "${name}"`).message);
    });
    if (model !== undefined && !(agent.models ?? []).includes(model)) {
      throw new KeelError(
        'INVALID_ARGUMENT',
        `--model ${model}: the workers have no model "${model}"; they have: ${(agent.models ?? []).join(', ') || '(none)'}`,
      );
    }
    // A tool a middleware contributes has no schema on the worker (the run takes its output as given, GenerateRun.checkOutput).
    const registered = new Set(agent.tools.map((tool) => tool.name));
    for (const { id, toolName, output } of toolResults.filter((result) => registered.has(result.toolName))) {
      await validateToolOutput({ toolName, output }).catch((error: unknown) => {
        throw new KeelError('INVALID_ARGUMENT', `--tool-result ${id}: ${asKeelError(error, `checking the result for tool "${toolName}"`).message}`);
      });
    }
  } catch (error) {
    throw KeelError.isInstance(error) ? toApplicationFailure(error) : error;
  }
}
setWorkflowOptions(sessionVersioningOptions, keelForkCheck);
