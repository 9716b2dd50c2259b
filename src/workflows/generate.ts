/**
 * generateWorkflow: one generate run, the tool loop (docs/protocol.md) as a Temporal workflow.
 * Each model call and each tool call is an activity; the agent is resolved by an activity
 * at the start (its answer recorded in history), so a changed definition never breaks replay
 * of a run under way. The conversation flows through the `wrapGenerate` chain as a value: each
 * iteration sends `params.messages` and returns the messages it ends with. The loop knows no
 * middleware by name; a hold's decision goes back, parsed by the hold's kind, to the stage that
 * raised it alone.
 *
 * Runs in the workflow sandbox: deterministic, no I/O. Everything external goes through
 * the activities proxied by the steps (call-model, call-tool).
 */
import { runContinuedAsNew, runEnded, runStarted } from '../core/workflow-metrics';
import {
  CancellationScope,
  ContinueAsNew,
  allHandlersFinished,
  condition,
  proxyActivities,
  proxyLocalActivities,
  setWorkflowOptions,
  workflowInfo,
} from '@temporalio/workflow';
import { KeelError } from '../core/errors';
import { INTERRUPT_METADATA, type ToolInterrupt } from '../core/interrupts';
import { MODEL_CALL_HOLD } from '../core/holds';
import { registeredHoldKind } from '../middleware/catalog';
import { assignToolRefs, messageText, toolRequestParts, type Message, type ModelRequest, type ModelResponse } from '../core/messages';
import { addUsage } from '../core/usage';
import { describeZodError } from '../core/schema-errors';
import { checkAnswer, outputRetryMessage, outputValidator, retriesSoFar, type OutputSpec } from '../core/output';
import { describeUndecodable, isUndecodable, requireOpened } from '../core/undecodable';
import { RunInputSchema, type AgentSpec, type RunInput, type RunResult } from '../core/run';
import { composeStage, composeToolChain } from '../middleware/compose';
import type { GenerateOutcome, GenerateParams } from '../middleware/types';
import type { KeelActivities } from '../activities/types';
import { RESOLVE_AGENT_OPTIONS, activityOptions, asKeelError, localActivityOptions } from './activity-errors';
import { modelCaller } from './call-model';
import { toolRunner } from './call-tool';
import { InterruptBoard } from './interrupt-board';
import { resumeHeldCalls } from './resume';
import { logRunAttributes } from './log-attributes';
import { continuedInput, messageChunks, restoreRunState, shouldContinueAsNew } from './continue-run';
import { newRunState, type RunState } from './run-state';
import { answerQueries, holdContext, recordRefusedSignal, settleCompleted, settleFailure, showInterrupts, startIndexing } from './run-status';
import { acceptsReport } from './reporters';
import { signHolds, trustedForResume } from './proofs';
import { setUpRun } from './run-setup';
import { assertContinuedFits, assertResultFits } from './payload-fit';
import { lazyLedger } from '../features/budget/tree-ledger';
import { runCall, settleTurn, type ToolTurnContext } from './tool-turn';
import { Steering } from './steering';
import { continueOnCurrentBuild, runVersioningOptions } from './versioning';

const { validateToolOutput } = proxyLocalActivities<KeelActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['NOT_FOUND', 'INVALID_ARGUMENT', 'INTERNAL'] },
});

/** A run's output schema, as the loop checks answers against it. */
interface RunOutput {
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

/**
 * The agent lookup: a regular activity (eagerly dispatched to this worker when it can), never a
 * local one. A query that arrives while a local activity runs in the first workflow task can close
 * that task early, and on replay the result then comes one task sooner: setup must never share a
 * task with it. A worker that lacks the agent refuses it retryably, so another takes it.
 */
const { resolveAgent } = proxyActivities<KeelActivities>(RESOLVE_AGENT_OPTIONS);

/** Checks a stand-in output against the tool's output schema; returns it parsed. */
async function validateOutput(toolName: string, output: unknown): Promise<unknown> {
  try {
    return await validateToolOutput({ toolName, output });
  } catch (error) {
    throw asKeelError(error, `validating the output for tool "${toolName}"`);
  }
}

/** The run's result from the outcome of its outermost iteration. */
function resultOf(outcome: GenerateOutcome, { status, artifacts, tasks }: RunState, output: RunOutput | undefined): RunResult {
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
    tasks: tasks.map((task) => task.taskId),
    interrupts: message.content.filter((part) => 'toolRequest' in part && part.metadata?.[INTERRUPT_METADATA.interrupt] !== undefined),
    decisions: status.decisions ?? [],
  };
}

/** The tool loop. */
export async function generateWorkflow(startInput: RunInput, ...carriedMessages: Message[][]): Promise<RunResult> {
  // Sealed with a key this worker lacks: the task fails and waits for a worker that has it.
  requireOpened(startInput, 'the run input');
  carriedMessages.forEach((chunk) => requireOpened(chunk, 'the conversation carried into this run'));
  // The next run of a chain gets its conversation as separate chunks (see continue-run.ts).
  const rawInput = carriedMessages.length && startInput?.continued ? { ...startInput, messages: carriedMessages.flat() } : startInput;
  const info = workflowInfo();
  const run = newRunState(info.workflowId, typeof rawInput?.agent === 'string' ? rawInput.agent : '');
  logRunAttributes(run);
  answerQueries(run);
  const tree = lazyLedger(run);
  const parsed = RunInputSchema.safeParse(rawInput);
  // Workflow-local tools have no schema on the worker to check a stand-in output against.
  const localTools = new Set<string>();
  const checkOutput = (toolName: string, output: unknown) => (localTools.has(toolName) ? Promise.resolve(output) : validateOutput(toolName, output));
  const board: InterruptBoard = new InterruptBoard({
    runId: info.workflowId,
    ...(parsed.success && parsed.data.reportTo ? { reportTo: parsed.data.reportTo } : {}),
    validateOutput: checkOutput,
    onChange: () => showInterrupts(run, board.pending()),
    holdContext: () => holdContext(run),
    onRefused: (refusal) => {
      run.status.refusedDecision = refusal;
      recordRefusedSignal(run, 'resume', refusal.reason);
    },
    acceptsReport: (key, childRunId) => acceptsReport(run, key, childRunId),
    onRefusedReport: (signal, reason) => recordRefusedSignal(run, signal, reason),
    followers: run,
    onReapplied: (decisions) => {
      run.status.reappliedDecisions = decisions;
    },
    onDecided: (records) => {
      run.status.decisions = records;
    },
    holdKindOf: (raisedBy, kind) => registeredHoldKind(raisedBy, kind),
    timeout: parsed.success ? parsed.data.interruptTimeout : undefined,
    onTimeout: parsed.success ? parsed.data.onInterruptTimeout : 'deny',
  });
  const steering = new Steering(run);
  // Set once the agent is resolved by a worker without External Storage: what one payload may hold.
  let inlinePayloadLimit: number | undefined;
  // The agent's name once a worker has resolved it: a metric's label is a registered name, never the caller's text.
  let resolvedAgent: string | undefined;
  try {
    if (!parsed.success)
      throw new KeelError(
        'INVALID_ARGUMENT',
        `invalid run input: ${isUndecodable(startInput) ? describeUndecodable(startInput) : describeZodError(parsed.error)}`,
      );
    const input: RunInput = parsed.data;
    let agent: AgentSpec;
    try {
      agent = await resolveAgent({ agent: input.agent });
    } catch (error) {
      throw asKeelError(error, `resolving agent "${input.agent}"`);
    }
    inlinePayloadLimit = agent.inlinePayloadLimit;
    resolvedAgent = agent.name;
    if (input.state && agent.session === 'server') {
      throw new KeelError('INVALID_ARGUMENT', `agent "${agent.name}" keeps its conversation on the server (session: 'server'): send a session id, not state`);
    }
    if (input.session && agent.session !== 'server') {
      throw new KeelError('INVALID_ARGUMENT', `agent "${agent.name}" is client-managed (session: 'client'): send its state, not a session id`);
    }
    // The next run of a chain goes on with the state the previous one carried.
    if (input.continued) {
      restoreRunState(run, input.continued.state);
      board.restoreDecisions(run.status.decisions ?? []);
    }
    if (!input.continued) runStarted(agent.name);
    // Listable by agent and state, when the namespace has keel's search attributes.
    if (agent.searchAttributes) startIndexing(run);
    const maxTurns = input.maxTurns ?? agent.maxTurns;
    if (maxTurns < 0) throw new KeelError('INVALID_ARGUMENT', `maxTurns must not be negative (got ${maxTurns})`);

    // A made-up history approves nothing: a resumed hold keeps its marks only with a valid proof.
    const signedHolds = (message: Message): Promise<Message> => signHolds(agent.name, message);
    if (input.resume) input.messages = await trustedForResume(agent.name, input.messages);
    const output = runOutputOf(input, agent);
    const callModel = modelCaller(run, {
      activity: activityOptions(agent.activities.model),
      local: localActivityOptions(agent.activities.model),
      ...(agent.localModels ? { localModels: agent.localModels } : {}),
      temporalRunId: info.runId,
      onUsage: (usage) => tree.counted(usage),
      ...(agent.modelQueues ? { modelQueues: agent.modelQueues } : {}),
    });
    // A hold before a model call (a Budget over its tree's limit) is shown as a call of this name.
    const holdModelCall = (interrupt: ToolInterrupt) =>
      board
        .hold(interrupt, { name: MODEL_CALL_HOLD, input: { model: agent.model } })
        .then((decided) => ('payload' in decided ? decided.payload : { respond: decided.output }));
    const setup = await setUpRun({
      agent,
      input,
      run,
      callModel,
      tree: tree.get,
      forgetChild: (runId) => board.forgetChild(runId),
      ...(input.interruptMode === 'wait' ? { holdModelCall } : {}),
    });
    for (const name of setup.contributed.keys()) localTools.add(name);
    const hooks = setup.stages.map((stage) => stage.hooks);
    // The innermost step: the model activity, which is what an interrupting steer cancels (never a hold in the stage).
    const modelStage = composeStage(hooks, 'wrapModel', (params) =>
      steering.modelActivity(params.request.messages, (messages) => callModel(params.model, { ...params.request, messages })),
    );
    const turn: ToolTurnContext = {
      chain: composeToolChain(
        hooks,
        toolRunner({
          contributed: setup.contributed,
          activity: activityOptions(agent.activities.tool),
          local: localActivityOptions(agent.activities.tool),
          ...(agent.localTools ? { localTools: agent.localTools } : {}),
          stage: hooks.length,
          run,
          // What a tool reports it spent counts like a model call's usage: the run's, its tree's, its budgets'.
          onUsage: (usage, toolName) => {
            run.status.usage = addUsage(run.status.usage, usage, `the usage tool "${toolName}" reported`);
            tree.counted(usage);
          },
        }),
      ),
      tools: setup.toolsByName,
      board,
      interruptMode: input.interruptMode,
      coversToolError: (toolName) => hooks.some((hook) => hook.coversToolError?.(toolName)),
    };

    /** One iteration: the model call, then the turn's tool calls, then the next iteration. */
    const iterate = async ({ iteration, messages }: GenerateParams): Promise<GenerateOutcome> => {
      if (input.resume && iteration === 0) {
        const resumed = await resumeHeldCalls(turn, {
          resume: input.resume,
          stages: setup.stages,
          validateOutput: checkOutput,
          messages,
          onDecided: (records) => board.recordDecisions(records),
        });
        if ('interrupted' in resumed) {
          steering.close('has ended (interrupted)');
          const held = await signedHolds(resumed.interrupted);
          return { response: { message: held, finishReason: 'interrupted', usage: {} }, messages: [...messages.slice(0, -1), held] };
        }
        run.messages = resumed.messages;
        return generate({ iteration: 1, messages: resumed.messages });
      }
      if (iteration > firstIteration && shouldContinueAsNew(input.continueAsNewAt)) {
        // A turn boundary with the history grown past its bounds: go on in a fresh run.
        board.close();
        await tree.flush();
        await condition(allHandlersFinished);
        const next = continuedInput(input, run, { iteration, messages, stages: setup.stages });
        const args: Parameters<typeof generateWorkflow> = [{ ...next, messages: [] }, ...messageChunks(next.messages)];
        assertContinuedFits(run.runId, args, next.messages.length, inlinePayloadLimit);
        runContinuedAsNew(agent.name);
        await continueOnCurrentBuild<typeof generateWorkflow>(...args);
      }
      run.status.turn += 1;
      // Steering messages sent meanwhile go in before the call (and one sent with interrupt makes it again).
      let response: ModelResponse;
      ({ response, messages } = await steering.callModel(messages, (sent) => {
        const request: ModelRequest = {
          messages: sent,
          tools: setup.tools,
          ...(agent.config ? { config: agent.config } : {}),
          ...(output ? { output: { format: 'json', schema: output.spec.schema, name: output.spec.name } } : {}),
        };
        return modelStage({ model: agent.model, request, iteration });
      }));
      const modelMessage: Message = assignToolRefs({ ...response.message, role: 'model' });
      run.messages = [...messages, modelMessage];
      const requests = toolRequestParts(modelMessage);
      if (requests.length === 0) {
        // A steer that came during the final call is answered by one more.
        if (steering.hasPending()) return generate({ iteration: iteration + 1, messages: run.messages });
        const answer: GenerateOutcome = { response: { ...response, message: modelMessage }, messages: run.messages };
        const checked =
          !output || (response.finishReason !== 'stop' && response.finishReason !== 'length') ? undefined : checkAnswer(output.validator, modelMessage);
        if (!output || !checked || checked.ok) {
          steering.close('has finished its loop');
          return answer;
        }
        // The model gets what was wrong and tries again, `retries` times; then the run fails naming the path.
        const retry = retriesSoFar(messages) + 1;
        if (retry > output.spec.retries) {
          throw new KeelError(
            'INVALID_ARGUMENT',
            `the model's answer does not match the output schema after ${output.spec.retries + 1} ${output.spec.retries === 0 ? 'attempt' : 'attempts'}: ${checked.error}`,
            { path: checked.path, modelName: agent.model },
          );
        }
        run.messages = [...run.messages, outputRetryMessage(checked.error, retry)];
        return generate({ iteration: iteration + 1, messages: run.messages });
      }
      if (iteration + 1 > maxTurns) {
        throw new KeelError('ABORTED', `exceeded maxTurns (${maxTurns}): the model still asked for tools after ${maxTurns} tool rounds`);
      }
      const calls = requests.map((part) => runCall(turn, { part, iteration, requestMessages: messages }));
      const settled = await settleTurn(turn, { modelMessage, requests, calls });
      if ('interrupted' in settled) {
        steering.close('has ended (interrupted)');
        const held = await signedHolds(settled.interrupted);
        return { response: { ...response, message: held, finishReason: 'interrupted' }, messages: [...messages, held] };
      }
      run.messages = [...run.messages, settled.toolMessage];
      return generate({ iteration: iteration + 1, messages: run.messages });
    };
    const generate = composeStage(hooks, 'wrapGenerate', iterate);

    const firstIteration = input.continued?.iteration ?? 0;
    const outcome = await generate({ iteration: firstIteration, messages: setup.messages });
    steering.close('has finished its loop');
    const result = resultOf(outcome, run, output);
    if (input.state)
      result.state = { messages: result.messages.filter((message) => message.role !== 'system'), artifacts: result.artifacts, custom: input.state.custom };
    assertResultFits(run.runId, result, inlinePayloadLimit);
    settleCompleted(run, result);
    board.close();
    await tree.flush();
    await condition(allHandlersFinished);
    runEnded(agent.name, result.finishReason === 'interrupted' ? 'interrupted' : 'completed');
    return result;
  } catch (error) {
    if (!(error instanceof ContinueAsNew)) steering.close('has ended');
    // What the run spent is told to its tree's ledger however it ends (a cancellation included).
    await CancellationScope.nonCancellable(() => tree.flush());
    const thrown = settleFailure(run, error, { inlinePayloadLimit });
    if (!(error instanceof ContinueAsNew)) runEnded(resolvedAgent, run.status.state);
    throw thrown;
  }
}

// A run declares its versioning behavior as it starts: the one its memo names, else the worker's default.
setWorkflowOptions(runVersioningOptions, generateWorkflow);
