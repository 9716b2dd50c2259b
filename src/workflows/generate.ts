/**
 * generateWorkflow: one generate run, the tool loop (docs/protocol.md) as a Temporal workflow.
 * Each model call and each tool call is an activity; the agent is resolved by an activity
 * at the start (its answer recorded in history), so a changed definition never breaks replay
 * of a run under way. The conversation flows through the `wrapGenerate` chain as a value: each
 * iteration sends `params.messages` and returns the messages it ends with. The loop knows no
 * middleware by name; a hold's decision goes back, parsed by the hold's kind, to the stage that
 * raised it alone.
 *
 * A run (generate-run.ts: its state, handlers, start and failure) and its loop (tool-loop.ts).
 * Runs in the workflow sandbox: deterministic, no I/O. Everything external goes through the
 * activities proxied by the steps (call-model, call-tool).
 */
import { setWorkflowOptions } from '@temporalio/workflow';
import type { Message } from '../core/messages';
import type { RunInput, RunResult } from '../core/run';
import { GenerateRun } from './generate-run';
import { ToolLoop } from './tool-loop';
import { runVersioningOptions } from '../engine/versioning';

/** The tool loop. */
export async function generateWorkflow(startInput: RunInput, ...carriedMessages: Message[][]): Promise<RunResult> {
  // The handlers are set before the first await: a message sent with the start is answered.
  const run = new GenerateRun(startInput, carriedMessages);
  try {
    const loop = await ToolLoop.create(run, await run.start());
    return await loop.run();
  } catch (error) {
    throw await run.failed(error);
  }
}

// A run declares its versioning behavior as it starts: the one its memo names, else the worker's default.
setWorkflowOptions(runVersioningOptions, generateWorkflow);
