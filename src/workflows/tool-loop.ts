/**
 * The tool loop of a generate run (docs/protocol.md) once its agent is resolved: its middleware
 * and tools (run-setup.ts), then iterations through the `wrapGenerate` chain, each way one goes
 * on a step of its own (a resume, continue-as-new, an answer, a tool turn, holds returned). It
 * knows no middleware by name. Runs in the workflow: deterministic, no I/O.
 */
import { workflowInfo } from '@temporalio/workflow';
import { principalOfMemo } from '../core/principal';
import { runContinuedAsNew, runEnded } from '../core/workflow-metrics';
import { KeelError } from '../core/errors';
import { conversationTurns } from '../core/fork';
import { INTERRUPT_METADATA, type ToolInterrupt } from '../core/interrupts';
import { MODEL_CALL_HOLD } from '../core/holds';
import {
  assignToolRefs,
  messageChunks,
  messageText,
  toolRequestParts,
  type Message,
  type ModelRequest,
  type ModelResponse,
  type ToolRequestPart,
} from '../core/messages';
import { checkAnswer, outputRetryMessage, outputValidator, retriesSoFar, type OutputSpec } from '../core/output';
import type { AgentSpec, RunInput, RunResult, RunResume } from '../core/run';
import { composeStage, composeToolChain } from '../middleware/compose';
import type { GenerateOutcome, GenerateParams, ModelCallParams, Next } from '../middleware/types';
import { modelCaller } from './call-model';
import { toolRunner } from './call-tool';
import { resumeHeldCalls } from './resume';
import { continuedInput, shouldContinueAsNew } from './continue-run';
import { settleCompleted } from './run-status';
import { signHolds, trustedForResume } from '../engine/proofs';
import { setUpRun, type RunSetup, type RunSetupOptions } from './run-setup';
import { assertContinuedFits, assertResultFits } from './payload-fit';
import { runCall, settleTurn, type ToolTurnContext } from './tool-turn';
import { continueOnCurrentBuild } from '../engine/versioning';
import type { GenerateRun, StartedRun } from './generate-run';

/** A run's output schema, as the loop checks answers against it. */
export interface RunOutput {
  spec: OutputSpec;
  validator: ReturnType<typeof outputValidator>;
}

/** The run's output schema (the run's own over the agent's), or undefined without one. */
function runOutputOf(input: RunInput, agent: AgentSpec): RunOutput | undefined {
  const spec = input.output ?? agent.output;
  if (!spec) return undefined;
  try {
    return { spec, validator: outputValidator(spec.schema) };
  } catch (error) {
    throw new KeelError('INVALID_ARGUMENT', `${input.output ? 'the run' : `agent "${agent.name}"`}: ${(error as Error).message}`, { path: 'output.schema' });
  }
}

/** The run's result from the outcome of its outermost iteration. */
function resultOf(outcome: GenerateOutcome, { state: { status, artifacts }, features }: GenerateRun, output: RunOutput | undefined): RunResult {
  const message = outcome.response.message;
  // The loop checked the answer already (and asked again until it matched): this reads its value.
  const checked = output && outcome.response.finishReason === 'stop' ? checkAnswer(output.validator, message) : undefined;
  return {
    ...(checked?.ok ? { output: checked.value } : {}),
    finishReason: outcome.response.finishReason,
    message,
    text: messageText(message),
    messages: outcome.messages,
    usage: status.usage,
    turns: status.turn,
    artifacts,
    tasks: (features.status().tasks ?? []).map((task) => task.taskId),
    interrupts: message.content.filter((part) => 'toolRequest' in part && part.metadata?.[INTERRUPT_METADATA.interrupt] !== undefined),
    decisions: status.decisions ?? [],
  };
}

/** What the loop is made of: the run, its input and agent, what they set up, and the answer's schema. */
type LoopParts = StartedRun & { run: GenerateRun; setup: RunSetup; output: RunOutput | undefined; callModel: RunSetupOptions['callModel'] };

/** A model reply of an iteration (its message has its tool refs), and the messages it was sent. */
type Reply = GenerateParams & { response: ModelResponse };

/** One run's tool loop: `generate` runs an iteration through the `wrapGenerate` chain. */
export class ToolLoop {
  readonly generate: Next<GenerateParams, GenerateOutcome>;
  /** The innermost model step: the model activity, which is what an interrupting steer cancels (never a hold in the stage). */
  private readonly modelStage: Next<ModelCallParams, ModelResponse>;
  private readonly turn: ToolTurnContext;
  /** The iteration this run starts at (a next run of a chain goes on at a turn boundary). */
  readonly firstIteration: number;

  /** Sets the run up: its middleware, their tools and the conversation the first iteration sends. */
  static async create(run: GenerateRun, { input, agent }: StartedRun): Promise<ToolLoop> {
    const maxTurns = input.maxTurns ?? agent.maxTurns;
    if (maxTurns < 0) throw new KeelError('INVALID_ARGUMENT', `maxTurns must not be negative (got ${maxTurns})`);
    // A made-up history approves nothing: a resumed hold keeps its marks only with a valid proof.
    if (input.resume) input.messages = await trustedForResume(agent.name, input.messages);
    const output = runOutputOf(input, agent);
    const callModel = modelCaller(run.state, { agent, onUsage: run.features.counted });
    // A hold before a model call (a Budget over its tree's limit) is shown as a call of this name.
    const holdModelCall = (interrupt: ToolInterrupt) =>
      run.board
        .hold(interrupt, { name: MODEL_CALL_HOLD, input: { model: agent.model } })
        .then((decided) => ('payload' in decided ? decided.payload : { respond: decided.output }));
    const setup = await setUpRun({
      agent,
      input,
      run: run.state,
      callModel,
      features: run.features,
      ...(input.interruptMode === 'wait' ? { holdModelCall } : {}),
    });
    run.stages = setup.stages;
    for (const name of setup.contributed.keys()) run.localTools.add(name);
    // The turns the conversation had when this run began (a chain's next run keeps its first run's).
    if (!input.continued) run.state.turns = { base: conversationTurns(setup.messages), usage: [] };
    return new ToolLoop({ run, input, agent, setup, output, callModel });
  }

  private constructor(private readonly parts: LoopParts) {
    const { run, agent, setup, input, callModel } = parts;
    const hooks = setup.stages.map((stage) => stage.hooks);
    this.modelStage = composeStage(hooks, 'wrapModel', (params) =>
      run.steering.modelActivity(params.request.messages, (messages) => callModel(params.model, { ...params.request, messages })),
    );
    const runTool = toolRunner({
      agent,
      contributed: setup.contributed,
      stage: hooks.length,
      run: run.state,
      onUsage: run.features.counted,
      caller: { principal: principalOfMemo(workflowInfo().memo), ...(input.session?.sentBy ? { sentBy: input.session.sentBy } : {}) },
    });
    this.turn = {
      chain: composeToolChain(hooks, runTool),
      tools: setup.toolsByName,
      board: run.board,
      interruptMode: input.interruptMode,
      coversToolError: (toolName) => hooks.some((hook) => hook.coversToolError?.(toolName)),
    };
    this.generate = composeStage(hooks, 'wrapGenerate', (params) => this.iterate(params));
    this.firstIteration = input.continued?.iteration ?? 0;
  }

  /** One iteration: the model call, then the turn's tool calls, then the next iteration. */
  private async iterate({ iteration, messages }: GenerateParams): Promise<GenerateOutcome> {
    const { run, input } = this.parts;
    if (input.resume && iteration === 0) return this.resume(input.resume, messages);
    if (iteration > this.firstIteration && shouldContinueAsNew(input.continueAsNewAt)) await this.continueAsNew(iteration, messages);
    // What the conversation had spent as this turn began: what a fork at the turn before carries.
    run.state.turns?.usage.push(run.state.status.usage);
    run.state.status.turn += 1;
    const called = await this.callModel(iteration, messages);
    const response = { ...called.response, message: assignToolRefs({ ...called.response.message, role: 'model' }) };
    run.state.messages = [...called.messages, response.message];
    const requests = toolRequestParts(response.message);
    const reply: Reply = { iteration, messages: called.messages, response };
    return requests.length === 0 ? this.answer(reply) : this.toolTurn(reply, requests);
  }

  /** Iteration 0 of a resume: the held calls, restarted or answered by their decisions, then iteration 1. */
  private async resume(resume: RunResume, messages: Message[]): Promise<GenerateOutcome> {
    const { run, setup } = this.parts;
    const resumed = await resumeHeldCalls(this.turn, {
      resume,
      stages: setup.stages,
      validateOutput: run.checkOutput,
      messages,
      approvers: this.parts.agent.approvers,
    });
    if ('interrupted' in resumed) return this.interrupted({ message: resumed.interrupted, finishReason: 'interrupted', usage: {} }, messages.slice(0, -1));
    run.state.messages = resumed.messages;
    return this.generate({ iteration: 1, messages: resumed.messages });
  }

  /** A turn boundary with the history grown past its bounds: the run goes on in a fresh one. */
  private async continueAsNew(iteration: number, messages: Message[]): Promise<never> {
    const { run, input, setup, agent } = this.parts;
    await run.windDown();
    const next = continuedInput(input, run.state, { iteration, messages, stages: setup.stages });
    const args: [RunInput, ...Message[][]] = [{ ...next, messages: [] }, ...messageChunks(next.messages)];
    assertContinuedFits(run.state.runId, args, next.messages.length, agent.inlinePayloadLimit);
    runContinuedAsNew(agent.name);
    return continueOnCurrentBuild<(input: RunInput, ...carriedMessages: Message[][]) => Promise<RunResult>>(...args);
  }

  /** The turn's model call; steering messages sent meanwhile go in before it (and one sent with interrupt makes it again). */
  private callModel(iteration: number, messages: Message[]): Promise<{ response: ModelResponse; messages: Message[] }> {
    const { agent, setup, output, run } = this.parts;
    return run.steering.callModel(messages, (sent) => {
      const request: ModelRequest = {
        messages: sent,
        tools: setup.tools,
        ...(agent.config ? { config: agent.config } : {}),
        ...(output ? { output: { format: 'json', schema: output.spec.schema, name: output.spec.name } } : {}),
      };
      return this.modelStage({ model: agent.model, request, iteration });
    });
  }

  /** A reply without tool calls: the answer, unless a steer came during the call or it does not match the output schema. */
  private async answer({ iteration, messages, response }: Reply): Promise<GenerateOutcome> {
    const { run, output, agent } = this.parts;
    // A steer that came during the final call is answered by one more.
    if (run.steering.hasPending()) return this.generate({ iteration: iteration + 1, messages: run.state.messages });
    const checked =
      !output || (response.finishReason !== 'stop' && response.finishReason !== 'length') ? undefined : checkAnswer(output.validator, response.message);
    if (!output || !checked || checked.ok) {
      run.steering.close('has finished its loop');
      return { response, messages: run.state.messages };
    }
    // The model gets what was wrong and tries again, `retries` times; then the run fails naming the path.
    const retry = retriesSoFar(messages) + 1;
    if (retry > output.spec.retries) {
      const attempts = `${output.spec.retries + 1} ${output.spec.retries === 0 ? 'attempt' : 'attempts'}`;
      throw new KeelError('INVALID_ARGUMENT', `the model's answer does not match the output schema after ${attempts}: ${checked.error}`, {
        path: checked.path,
        modelName: agent.model,
      });
    }
    run.state.messages = [...run.state.messages, outputRetryMessage(checked.error, retry)];
    return this.generate({ iteration: iteration + 1, messages: run.state.messages });
  }

  /** A reply with tool calls: they run (concurrently) and settle, then the next iteration. */
  private async toolTurn({ iteration, messages, response }: Reply, requests: ToolRequestPart[]): Promise<GenerateOutcome> {
    const { run, input, agent } = this.parts;
    const maxTurns = input.maxTurns ?? agent.maxTurns;
    if (iteration + 1 > maxTurns) {
      throw new KeelError('ABORTED', `exceeded maxTurns (${maxTurns}): the model still asked for tools after ${maxTurns} tool rounds`);
    }
    const calls = requests.map((part) => runCall(this.turn, { part, iteration, requestMessages: messages }));
    const settled = await settleTurn(this.turn, { modelMessage: response.message, requests, calls });
    if ('interrupted' in settled) return this.interrupted({ ...response, message: settled.interrupted }, messages);
    run.state.messages = [...run.state.messages, settled.toolMessage];
    return this.generate({ iteration: iteration + 1, messages: run.state.messages });
  }

  /** Ends the loop with holds returned to the caller (interruptMode 'return'), signed so that only these resume. */
  private async interrupted(response: ModelResponse, before: Message[]): Promise<GenerateOutcome> {
    this.parts.run.steering.close('has ended (interrupted)');
    const held = await signHolds(this.parts.agent.name, response.message);
    return { response: { ...response, message: held, finishReason: 'interrupted' }, messages: [...before, held] };
  }

  /** Runs the loop from the run's first iteration (or where the chain goes on); records its result as the run's end. */
  async run(): Promise<RunResult> {
    const { run, input, output, agent, setup } = this.parts;
    const outcome = await this.generate({ iteration: this.firstIteration, messages: setup.messages });
    run.steering.close('has finished its loop');
    const result = resultOf(outcome, run, output);
    if (input.state)
      result.state = { messages: result.messages.filter((message) => message.role !== 'system'), artifacts: result.artifacts, custom: input.state.custom };
    assertResultFits(run.state.runId, result, agent.inlinePayloadLimit);
    settleCompleted(run.state, result);
    await run.windDown();
    runEnded(agent.name, result.finishReason === 'interrupted' ? 'interrupted' : 'completed');
    return result;
  }
}
