/**
 * The innermost tool stage: runs a middleware's workflow-local tool, or the tool's
 * `callTool` activity. A tool that asks for a decision becomes a hold of the tool stage, a
 * tool that answers with `toolFail` an error the model sees; any other failure is the tool's own (`ToolFailure`), which the tool-error policy may
 * answer to the model. Runs in the workflow: deterministic, no I/O.
 */
import { principalField, type Principal } from '../core/principal';
import { z } from 'zod';
import { defineHold, undeclaredHold } from '../core/holds';
import { ApplicationFailure, isCancellation } from '@temporalio/workflow';
import { KeelError, RunStoppedError, ownToolFailure, toKeelError } from '../core/errors';
import { ToolCallResultSchema, type AgentSpec } from '../core/run';
import { describeZodError } from '../core/schema-errors';
import { ModelVisibleToolError, TOOL_FAIL_FAILURE, TOOL_INTERRUPT_FAILURE, TOOL_STAGE, ToolInterrupt, holdData, toolFail } from '../core/interrupts';
import { callToolDoor, proxyDoor } from '../engine/activities';
import type { ToolRunner } from '../middleware/compose';
import type { ContributedTool } from '../middleware/types';
import { activityCause, activityOptions, asKeelError, localActivityOptions, untilRegistered } from '../engine/activity-errors';
import type { RunState } from './run-state';
import { addUsage, type Usage } from '../core/usage';

/** Whom a run belongs to and who sent its turn, as its tools' context says them. */
export interface ToolCaller {
  principal: Principal;
  sentBy?: Principal;
}

/** Options of `toolRunner`. */
export interface ToolRunnerOptions {
  /** The tool activity's options, and which tools are called as local activities. */
  agent: Pick<AgentSpec, 'activities' | 'localTools'>;
  /** Tools middleware contributed, by name; they run in the workflow. */
  contributed: ReadonlyMap<string, ContributedTool>;
  /** Position of the tool stage: after every wrapTool hook. */
  stage: number;
  /** The run: its agent and turn go with each call (for traces and logs); what a tool reports it spent counts in its usage. */
  run: Pick<RunState, 'status'>;
  /** Counts what a tool reported it spent beyond the run's usage (into its tree's ledger), as a model call's usage is. */
  onUsage?: (usage: Usage) => void;
  /** Whom the run belongs to and who sent its turn (docs/tenants.md): a tool's context says them. */
  caller?: ToolCaller;
}

/** A tool's own question: any data, and the tool gets the decision's payload as sent. */
const TOOL_HOLD = undeclaredHold(TOOL_STAGE);

/**
 * A call of a tool with `effects: 'once'` whose earlier attempt was lost: did it happen? A stand-in
 * output (`respond`) says it did and answers the call; a restart runs it again or stops the run.
 * No approve or deny: neither says which.
 */
const RECONCILE_HOLD = defineHold({
  kind: 'reconcile',
  question: (data, { toolName }) => (typeof data.question === 'string' ? data.question : `did ${toolName} happen?`),
  data: z.record(z.string(), z.unknown()),
  decision: z.object({ reconcile: z.enum(['run-again', 'stop']).describe('run-again: it did not happen, run it again; stop: stop the run') }).strict(),
});

/** The innermost stage of the wrapTool chain. */
export function toolRunner({ agent, contributed, stage, run, onUsage, caller = { principal: {} } }: ToolRunnerOptions): ToolRunner {
  const callerFields = {
    ...principalField(caller.principal),
    ...(caller.sentBy ? { sentBy: caller.sentBy } : {}),
  };
  const activity = activityOptions(agent.activities.tool);
  const localOptions = localActivityOptions(agent.activities.tool);
  const localTools = agent.localTools ?? [];
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
        throw ownToolFailure(toKeelError(error), name);
      }
    }
    // The answer to a lost attempt's question (a tool with effects: 'once'): stop, or run it again as a new call.
    const reconciled = (resumed as { reconcile?: unknown } | undefined)?.reconcile;
    if (reconciled === 'stop') throw new RunStoppedError({ status: 'ABORTED', message: `stopped: nobody could say whether tool "${name}" happened` });
    if (reconciled === 'run-again') resumed = undefined;
    let answer: unknown;
    try {
      const callTool = proxyDoor(
        callToolDoor,
        localTools.includes(name) ? { local: true, ...localOptions, summary: `tool ${name}` } : { ...activity, summary: `tool ${name}` },
      );
      answer = await untilRegistered((refusedBefore) =>
        callTool({
          toolName: name,
          input: call.request.input,
          ref: call.request.ref,
          agent: run.status.agent,
          turn: run.status.turn,
          ...callerFields,
          ...(resumed !== undefined ? { resumed } : {}),
          ...(refusedBefore ? { refusedBefore } : {}),
        }),
      );
    } catch (error) {
      const cause = activityCause(error);
      if (cause instanceof ApplicationFailure && cause.type === TOOL_INTERRUPT_FAILURE) {
        const data = holdData(cause.details?.[0] ?? {});
        throw new ToolInterrupt({ data, raisedBy: TOOL_STAGE, stage, hold: 'keelReconcile' in data ? RECONCILE_HOLD : TOOL_HOLD });
      }
      if (cause instanceof ApplicationFailure && cause.type === TOOL_FAIL_FAILURE) throw toolFail(cause.message);
      const failure = asKeelError(error, `tool "${name}"`);
      if (failure.status === 'CANCELLED') throw failure;
      throw ownToolFailure(failure, name);
    }
    // Past the tool's own failures: what the answer brings is the run's to count, never answered to the model.
    // Checked as it crosses into the run: an activity's completion can be sent by anyone with the `temporal` CLI.
    const parsed = ToolCallResultSchema.safeParse(answer);
    if (!parsed.success)
      throw new KeelError('DATA_LOSS', `tool "${name}" answered what no keel worker sends: ${describeZodError(parsed.error)}`, { toolName: name });
    const { usage } = parsed.data;
    if (usage && Object.keys(usage).length) {
      run.status.usage = addUsage(run.status.usage, usage, `the usage tool "${name}" reported`);
      onUsage?.(usage);
    }
    return parsed.data.output;
  };
}
