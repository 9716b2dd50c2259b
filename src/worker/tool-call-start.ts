/**
 * Tells, as each tool call's attempt starts on this worker, which call it is: the tool, the run,
 * the attempt. `keel worker` logs a line with it, so a person can see which worker runs a slow
 * step (and kill that one) without asking Temporal. An activity interceptor: it sees the call
 * before keel's `callTool` runs it. Node side.
 */
import type { ActivityInterceptorsFactory } from '@temporalio/worker';

/** A tool call's attempt starting on this worker. */
export interface ToolCallStart {
  toolName: string;
  /** The run (its workflow id). */
  runId: string;
  /** The activity's attempt, from 1. */
  attempt: number;
  /** The activity id within the run's current execution. */
  activityId: string;
}

/** An activity interceptor that calls `onToolCallStart` as each `callTool` attempt starts. */
export function toolCallStartInterceptor(onToolCallStart: (call: ToolCallStart) => void): ActivityInterceptorsFactory {
  return (context) => ({
    inbound: {
      execute: (input, next) => {
        const { info } = context;
        const toolName = (input.args[0] as { toolName?: unknown } | undefined)?.toolName;
        if (info.activityType === 'callTool' && typeof toolName === 'string') {
          try {
            onToolCallStart({ toolName, runId: info.workflowExecution?.workflowId ?? 'standalone', attempt: info.attempt, activityId: info.activityId });
          } catch {
            // A log line that cannot be written must not fail the call.
          }
        }
        return next(input);
      },
    },
  });
}

/** The line `keel worker` logs for a tool call's attempt: `keel: worker <pid> runs tool <name> (run <runId>, attempt <n>)`. */
export function describeToolCallStart({ toolName, runId, attempt }: ToolCallStart, pid = process.pid): string {
  return `keel: worker ${pid} runs tool ${toolName} (run ${runId}, attempt ${attempt})`;
}
