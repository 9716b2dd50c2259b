/**
 * The core's activities, declared as a feature declares its own (src/middleware/activity-door.ts):
 * each one's registered name, the zod schemas of what goes in and comes out, and what a call
 * does in a few words. The workflow proxies a door with options of the call's own
 * (`proxyDoor`), typed by its declaration; the worker registers its implementation under the
 * door's name (src/worker/create-activities.ts). What keel's own worker answers is typed here,
 * not parsed again: the workflow checks what it must where it takes it (a tool's answer,
 * call-tool.ts). Pure: runs in the workflow.
 */
import { proxyActivities, proxyLocalActivities, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';
import { z } from 'zod';
import type { ModelResponse } from '../core/messages';
import { SignProofsInputSchema, VerifyProofsInputSchema } from '../core/proofs';
import {
  CallModelInputSchema,
  CallToolInputSchema,
  ResolveAgentInputSchema,
  ToolCallResultSchema,
  ValidateToolOutputInputSchema,
  type AgentSpec,
} from '../core/run';
import { defineActivity, type ActivityDoor, type DoorFunction } from '../middleware/activity-door';

/** The agent's spec as registered on the worker that takes the call. */
export const resolveAgentDoor = defineActivity({
  name: 'resolveAgent',
  input: ResolveAgentInputSchema,
  output: z.custom<AgentSpec>(),
  describe: ({ agent }) => `resolving agent "${agent}"`,
});

/** One model call; reads the request back from the run by key when it is not inline. */
export const callModelDoor = defineActivity({
  name: 'callModel',
  input: CallModelInputSchema,
  output: z.custom<ModelResponse>(),
  describe: ({ model }) => `model ${model}`,
});

/** One tool call: input and output checked against the tool's schemas; the output and what the tool reported it spent. */
export const callToolDoor = defineActivity({
  name: 'callTool',
  input: CallToolInputSchema,
  output: ToolCallResultSchema,
  describe: ({ toolName }) => `tool ${toolName}`,
});

/** Checks a stand-in output against the tool's output schema; answers it parsed. */
export const validateToolOutputDoor = defineActivity({
  name: 'validateToolOutput',
  input: ValidateToolOutputInputSchema,
  output: z.unknown(),
  kind: 'local',
  describe: ({ toolName }) => `validating the output for tool "${toolName}"`,
});

/** Signs what a client must not forge (a held call, a task id) with the workers' key (src/core/proofs.ts). */
export const signProofsDoor = defineActivity({
  name: 'signProofs',
  input: SignProofsInputSchema,
  output: z.array(z.string()),
  describe: () => 'signing proofs',
});

/** Checks proofs that came back with a conversation: one answer per claim. */
export const verifyProofsDoor = defineActivity({
  name: 'verifyProofs',
  input: VerifyProofsInputSchema,
  output: z.array(z.boolean()),
  describe: () => 'checking proofs',
});

/** The core's activities as a worker implements them, under their doors' names (what every keel worker registers besides the features' own). */
export interface CoreActivities {
  resolveAgent: DoorFunction<typeof resolveAgentDoor>;
  callModel: DoorFunction<typeof callModelDoor>;
  callTool: DoorFunction<typeof callToolDoor>;
  validateToolOutput: DoorFunction<typeof validateToolOutputDoor>;
  signProofs: DoorFunction<typeof signProofsDoor>;
  verifyProofs: DoorFunction<typeof verifyProofsDoor>;
}

/**
 * A door's activity, proxied with `options` (local ones when `local` is set, or the door is
 * local): typed by the door. Its failures come as Temporal's: each call site says what they mean.
 */
export function proxyDoor<Door extends ActivityDoor>(
  door: Door,
  options: ({ local?: false } & ActivityOptions) | ({ local: true } & LocalActivityOptions),
): DoorFunction<Door> {
  const { local, ...rest } = options;
  const activities =
    local || door.kind === 'local' ? proxyLocalActivities<Record<string, DoorFunction<Door>>>(rest) : proxyActivities<Record<string, DoorFunction<Door>>>(rest);
  return activities[door.name] as DoorFunction<Door>;
}
