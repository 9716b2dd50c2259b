/**
 * What a run is made of once its agent is resolved: its middleware stages (with the
 * parts the features lend them), the tools the model may call (the agent's plus those middleware
 * contribute, names unique), and the system prompt. Runs in the workflow: no I/O.
 */
import { workflowInfo } from '@temporalio/workflow';
import { principalOfMemo } from '../core/principal';
import { artifactStore } from '../core/artifacts';
import { KeelError } from '../core/errors';
import type { Message, ModelRequest, ModelResponse, ToolDefinition } from '../core/messages';
import type { AgentSpec, RunInput } from '../core/run';
import { instantiateMiddleware, type MiddlewareStage } from '../middleware/stages';
import { resumedHoldsByStage } from './resume';
import { featureActivityCaller } from '../engine/feature-activity';
import { registeredMiddleware } from '../features/catalog';
import type { FeatureRuns } from '../features/feature';
import type { ContributedTool } from '../middleware/types';
import type { ToolInterrupt } from '../core/interrupts';
import type { RunState } from './run-state';

/** A run's middleware and tools. */
export interface RunSetup {
  stages: MiddlewareStage[];
  /** Every tool the model may call, the agent's first. */
  tools: ToolDefinition[];
  toolsByName: Map<string, ToolDefinition>;
  /** Tools middleware contributed, run in the workflow. */
  contributed: Map<string, ContributedTool>;
  /** The conversation the first iteration sends: the input, behind the system prompt. */
  messages: Message[];
}

/** Options of `setUpRun`. */
export interface RunSetupOptions {
  agent: AgentSpec;
  input: RunInput;
  run: RunState;
  /** What the built-in features lend their middleware. */
  features: Pick<FeatureRuns, 'parts'>;
  callModel: (model: string, request: ModelRequest) => Promise<ModelResponse>;
  /** Holds the run before its next model call (undefined: it cannot wait, interruptMode 'return'). */
  holdModelCall?: (interrupt: ToolInterrupt) => Promise<unknown>;
}

/** Instantiates the middleware and gathers the tools (a duplicate name is INVALID_ARGUMENT); records the first conversation in the run. */
export async function setUpRun({ agent, input, run, callModel, features, holdModelCall }: RunSetupOptions): Promise<RunSetup> {
  let resumedHolds = new Map<number, unknown[]>();
  const stages: MiddlewareStage[] = await instantiateMiddleware(
    [...agent.use, ...input.use],
    {
      agent,
      callModel,
      usage: () => run.status.usage,
      ...(holdModelCall ? { holdModelCall } : {}),
      activity: featureActivityCaller(agent.activities.tool),
      artifacts: artifactStore(run),
      inputMessages: input.messages,
      carried: (key) => input.continued?.middleware[key],
      session: input.session,
      principal: principalOfMemo(workflowInfo().memo),
      resuming: input.resume !== undefined,
      // A middleware whose holds share one decision reads the holds of every instance of its name.
      resumedHolds: (index) => {
        const stage = stages[index]!;
        const claimed = stage.holds.some((hold) => hold.sharedDecision) ? stages.filter((other) => other.name === stage.name) : [stage];
        return claimed.flatMap((other) => resumedHolds.get(other.index) ?? []);
      },
    },
    registeredMiddleware(),
    features.parts,
  );
  if (input.resume) resumedHolds = resumedHoldsByStage(input.resume, input.messages, stages);
  const tools: ToolDefinition[] = [];
  const toolsByName = new Map<string, ToolDefinition>();
  const contributed = new Map<string, ContributedTool>();
  const add = (tool: ToolDefinition, duplicate: string) => {
    if (toolsByName.has(tool.name)) throw new KeelError('INVALID_ARGUMENT', duplicate, { toolName: tool.name });
    toolsByName.set(tool.name, tool);
    tools.push(tool);
  };
  for (const tool of agent.tools) add(tool, `duplicate tool name "${tool.name}" in agent "${agent.name}"`);
  for (const stage of stages) {
    for (const tool of stage.hooks.tools ?? []) {
      add(tool.definition, `tool "${tool.definition.name}" is contributed by middleware but already declared elsewhere`);
      contributed.set(tool.definition.name, tool);
    }
  }
  const systemText = [agent.system, ...stages.map((stage) => stage.hooks.systemPrompt)].filter((text): text is string => !!text).join('\n\n');
  // A client-managed conversation's history comes first (without a system prompt of its own).
  // A fork's conversation goes on under the agent's system prompt as it is now (its source's first message is its own).
  const given = input.fork && input.messages[0]?.role === 'system' ? input.messages.slice(1) : input.messages;
  const conversation = [...(input.state?.messages ?? []).filter((message) => message.role !== 'system'), ...given];
  const messages: Message[] =
    conversation[0]?.role === 'system' || !systemText ? conversation : [{ role: 'system', content: [{ text: systemText }] }, ...conversation];
  run.messages = messages;
  run.artifacts = [...(input.state?.artifacts ?? []), ...input.artifacts];
  return { stages, tools, toolsByName, contributed, messages };
}
