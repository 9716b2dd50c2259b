/**
 * The innermost tool stage: runs a middleware's workflow-local tool, or the tool's
 * `callTool` activity. A tool that asks for a decision becomes a hold of the tool stage, a
 * tool that answers with `toolFail` an error the model sees; any other failure is the tool's own (`ToolFailure`), which the tool-error policy may
 * answer to the model. Runs in the workflow: deterministic, no I/O.
 */
import { undeclaredHold } from '../core/holds';
import {
  ApplicationFailure,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import { KeelError, RunStoppedError, ToolFailure, toKeelError } from '../core/errors';
import { ToolCallResultSchema } from '../core/run';
import { describeZodError } from '../core/schema-errors';
import { ModelVisibleToolError, TOOL_FAIL_FAILURE, TOOL_INTERRUPT_FAILURE, TOOL_STAGE, ToolInterrupt, holdData, toolFail } from '../core/interrupts';
import type { KeelActivities } from '../activities/types';
import type { ToolRunner } from '../middleware/compose';
import type { ContributedTool } from '../middleware/types';
import { activityCause, asKeelError, untilRegistered } from './activity-errors';
import type { RunState } from './run-state';
import type { Usage } from '../core/usage';

/** Options of `toolRunner`. */
export interface ToolRunnerOptions {
  /** Tools middleware contributed, by name; they run in the workflow. */
  contributed: ReadonlyMap<string, ContributedTool>;
  /** Options of the tool activity. */
  activity: ActivityOptions;
  /** Options of a tool call made as a local activity. */
  local?: LocalActivityOptions;
  /** Tools whose calls are local activities (AgentSpec.localTools). */
  localTools?: ReadonlyArray<string>;
  /** Position of the tool stage: after every wrapTool hook. */
  stage: number;
  /** The run: its agent and turn go with each call (for traces and logs). */
  run?: Pick<RunState, 'status'>;
  /** Counts what a tool reported it spent (into the run's usage and its tree's ledger). */
  onUsage?: (usage: Usage, toolName: string) => void;
}

/** A tool's own question: any data, and the tool gets the decision's payload as sent. */
const TOOL_HOLD = undeclaredHold(TOOL_STAGE);

/** The innermost stage of the wrapTool chain. */
export function toolRunner({ contributed, activity, local: localOptions, localTools = [], stage, run, onUsage }: ToolRunnerOptions): ToolRunner {
  return async (call, resumed) => {
    const name = call.request.name;
    const local = contributed.get(name);
    if (local) {
      const interrupt = (data?: Record<string, unknown>): never => {
        throw new ToolInterrupt({ data: holdData(data), raisedBy: TOOL_STAGE, stage, hold: TOOL_HOLD });
      };
      try {
        return await local.run(call.request.input, { ...call, interrupt, ...(resumed !== undefined ? { resumed } : {}) });
      } catch (error) {
        if (isCancellation(error) || ToolInterrupt.isInstance(error) || ModelVisibleToolError.isInstance(error) || RunStoppedError.isInstance(error))
          throw error;
        throw ownFailure(toKeelError(error), name);
      }
    }
    let answer: unknown;
    try {
      const { callTool } =
        localOptions && localTools.includes(name)
          ? proxyLocalActivities<KeelActivities>({ ...localOptions, summary: `tool ${name}` })
          : proxyActivities<KeelActivities>({ ...activity, summary: `tool ${name}` });
      answer = await untilRegistered((refusedBefore) =>
        callTool({
          toolName: name,
          input: call.request.input,
          ref: call.request.ref,
          ...(run ? { agent: run.status.agent, turn: run.status.turn } : {}),
          ...(resumed !== undefined ? { resumed } : {}),
          ...(refusedBefore ? { refusedBefore } : {}),
        }),
      );
    } catch (error) {
      const cause = activityCause(error);
      if (cause instanceof ApplicationFailure && cause.type === TOOL_INTERRUPT_FAILURE) {
        throw new ToolInterrupt({ data: holdData(cause.details?.[0] ?? {}), raisedBy: TOOL_STAGE, stage, hold: TOOL_HOLD });
      }
      if (cause instanceof ApplicationFailure && cause.type === TOOL_FAIL_FAILURE) throw toolFail(cause.message);
      const failure = asKeelError(error, `tool "${name}"`);
      if (failure.status === 'CANCELLED') throw failure;
      throw ownFailure(failure, name);
    }
    // Past the tool's own failures: what the answer brings is the run's to count, never answered to the model.
    // Checked as it crosses into the run: an activity's completion can be sent by anyone with the `temporal` CLI.
    const parsed = ToolCallResultSchema.safeParse(answer);
    if (!parsed.success)
      throw new KeelError('DATA_LOSS', `tool "${name}" answered what no keel worker sends: ${describeZodError(parsed.error)}`, { toolName: name });
    if (parsed.data.usage && Object.keys(parsed.data.usage).length) onUsage?.(parsed.data.usage, name);
    return parsed.data.output;
  };
}

/** The tool's own failure, answered to the model (when covered) in the tool's own words. */
function ownFailure(failure: KeelError, toolName: string): ToolFailure {
  const modelMessage = typeof failure.details.toolMessage === 'string' ? failure.details.toolMessage : failure.message;
  return new ToolFailure({
    status: failure.status,
    message: failure.message,
    toolName,
    modelMessage,
    details: failure.details,
    classified: failure.classified,
  });
}
