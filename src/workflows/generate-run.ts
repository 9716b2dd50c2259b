/**
 * One generate run, from its first line: its state, its features' parts (catalog.ts), and the
 * handlers of its messages (queries, `resume` and holds reported on the board, `steer`), set
 * before the first await. Then its start (input checked, agent resolved), the wind-down every
 * end shares, and its failure; its loop is tool-loop.ts. Runs in the workflow: no I/O.
 */
import { CancellationScope, ContinueAsNew, allHandlersFinished, condition, workflowInfo } from '@temporalio/workflow';
import { holdMetrics, runEnded, runStarted } from '../core/workflow-metrics';
import { KeelError } from '../core/errors';
import type { Message } from '../core/messages';
import { describeZodError } from '../core/schema-errors';
import { describeUndecodable, isUndecodable, requireOpened } from '../core/undecodable';
import { RunInputSchema, type AgentSpec, type RunInput } from '../core/run';
import { proxyDoor, resolveAgentDoor, validateToolOutputDoor } from '../engine/activities';
import { FEATURES } from '../features/catalog';
import { featureRuns, type FeatureRuns } from '../features/feature';
import type { MiddlewareStage } from '../middleware/stages';
import { RESOLVE_AGENT_OPTIONS, asKeelError } from '../engine/activity-errors';
import { HoldBoard } from './hold-board';
import { verify } from '../engine/proofs';
import { logRunAttributes } from './log-attributes';
import { restoreRunState } from './continue-run';
import { newRunState, type RunState } from './run-state';
import { answerQueries, recordRefusedSignal, settleFailure, startIndexing } from './run-status';
import { expectReports } from './reporters';
import { addUsage } from '../core/usage';
import { Steering } from './steering';

const validateToolOutput = proxyDoor(validateToolOutputDoor, {
  local: true,
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['NOT_FOUND', 'INVALID_ARGUMENT', 'INTERNAL'] },
});

/**
 * The agent lookup: a regular activity (eagerly dispatched to this worker when it can), never a
 * local one. A query that arrives while a local activity runs in the first workflow task can close
 * that task early, and on replay the result then comes one task sooner: setup must never share a
 * task with it. A worker that lacks the agent refuses it retryably, so another takes it.
 */
const resolveAgent = proxyDoor(resolveAgentDoor, RESOLVE_AGENT_OPTIONS);

/** A run's checked input and the agent a worker resolved for it. */
export type StartedRun = { input: RunInput; agent: AgentSpec };

/** One generate run: its state, its features' parts, the handlers of its messages, and how it starts and ends. */
export class GenerateRun {
  readonly state: RunState;
  /** Every built-in feature's part of the run (built now; what each lends its middleware is built on first use). */
  readonly features: FeatureRuns;
  /** The run's middleware stages, once the loop has set them up. */
  stages: MiddlewareStage[] = [];
  readonly board: HoldBoard;
  readonly steering: Steering;
  /** Tools run in the workflow: they have no schema on the worker to check a stand-in output against. */
  readonly localTools = new Set<string>();
  /** The agent once a worker has resolved it: a metric's label is its registered name, never the caller's text. */
  private agent: AgentSpec | undefined;
  private readonly parsed: ReturnType<typeof RunInputSchema.safeParse>;

  constructor(
    private readonly startInput: RunInput,
    carriedMessages: Message[][],
  ) {
    // Sealed with a key this worker lacks: the task fails and waits for a worker that has it.
    requireOpened(startInput, 'the run input');
    carriedMessages.forEach((chunk) => requireOpened(chunk, 'the conversation carried into this run'));
    // The next run of a chain, and a fork, get their conversation as separate chunks (see continue-run.ts).
    const chunked = carriedMessages.length && (startInput?.continued || startInput?.fork);
    const rawInput = chunked ? { ...startInput, messages: carriedMessages.flat() } : startInput;
    const run = (this.state = newRunState(workflowInfo().workflowId, typeof rawInput?.agent === 'string' ? rawInput.agent : ''));
    logRunAttributes(run);
    answerQueries(run, () => this.features.status());
    this.features = featureRuns(
      FEATURES,
      {
        runId: run.runId,
        addUsage: (usage, from) => {
          run.status.usage = addUsage(run.status.usage, usage, from);
        },
        expectReports: (key, source) => expectReports(run, key, source),
        refuseSignal: (signal, why) => recordRefusedSignal(run, signal, why),
        inherited: () => this.stages.flatMap((stage) => stage.hooks.forChildRuns?.() ?? []),
        forgetChild: (runId) => this.board.forgetChild(runId),
        spec: () => this.agent,
      },
      run.features,
    );
    const parsed = (this.parsed = RunInputSchema.safeParse(rawInput));
    this.board = new HoldBoard({
      run,
      input: parsed.success ? parsed.data : undefined,
      validateOutput: this.checkOutput,
      observers: [holdMetrics, (event) => this.features.observe(event)],
      approvers: () => this.agent?.approvers,
      verifyDecider: async (subject, proof) => (await verify([{ subject, proof }]))[0] === true,
    });
    this.steering = new Steering(run);
  }

  /** Checks a stand-in output against the tool's output schema (a workflow-local tool's as given); returns it parsed. */
  readonly checkOutput = async (toolName: string, output: unknown): Promise<unknown> => {
    if (this.localTools.has(toolName)) return output;
    try {
      return await validateToolOutput({ toolName, output });
    } catch (error) {
      throw asKeelError(error, `validating the output for tool "${toolName}"`);
    }
  };

  /** Checks the input and resolves the agent; a next run of a chain takes back the state the last one carried. */
  async start(): Promise<StartedRun> {
    const { parsed, startInput, state } = this;
    if (!parsed.success) {
      const why = isUndecodable(startInput) ? describeUndecodable(startInput) : describeZodError(parsed.error);
      throw new KeelError('INVALID_ARGUMENT', `invalid run input: ${why}`);
    }
    const input = parsed.data;
    let agent: AgentSpec;
    try {
      agent = await resolveAgent({ agent: input.agent });
    } catch (error) {
      throw asKeelError(error, `resolving agent "${input.agent}"`);
    }
    if (input.model) {
      if (!(agent.models ?? []).includes(input.model)) {
        throw new KeelError('INVALID_ARGUMENT', `model "${input.model}" is not registered; registered models: ${(agent.models ?? []).join(', ') || '(none)'}`);
      }
      agent = { ...agent, model: input.model };
    }
    this.agent = agent;
    if (input.state && agent.session === 'server') {
      throw new KeelError('INVALID_ARGUMENT', `agent "${agent.name}" keeps its conversation on the server (session: 'server'): send a session id, not state`);
    }
    if (input.session && agent.session !== 'server') {
      throw new KeelError('INVALID_ARGUMENT', `agent "${agent.name}" is client-managed (session: 'client'): send its state, not a session id`);
    }
    if (input.continued) {
      restoreRunState(state, input.continued.state, FEATURES);
      this.board.restoreDecisions(state.status.decisions ?? []);
    } else {
      if (input.fork) Object.assign(state.status, { fork: input.fork, turn: input.fork.turn });
      runStarted(agent.name);
    }
    // Listable by agent and state, when the namespace has keel's search attributes.
    if (agent.searchAttributes) startIndexing(state, { forks: agent.forkAttribute === true, principals: agent.principalAttributes === true });
    return { input, agent };
  }

  /** What every end but a failure does last: no hold waits any more, the features settle, the handlers finish. */
  async windDown(): Promise<void> {
    this.board.close();
    await this.features.settle();
    await condition(allHandlersFinished);
  }

  /** Records how the run ended without a result; returns what the workflow throws (a continue-as-new as is). */
  async failed(error: unknown): Promise<unknown> {
    const continuing = error instanceof ContinueAsNew;
    if (!continuing) this.steering.close('has ended');
    // What the features must still say is said however the run ends (a cancellation included).
    await CancellationScope.nonCancellable(async () => {
      await this.features.settle();
    });
    const thrown = settleFailure(this.state, error, { inlinePayloadLimit: this.agent?.inlinePayloadLimit });
    if (!continuing) runEnded(this.agent?.name, this.state.status.state);
    return thrown;
  }
}
