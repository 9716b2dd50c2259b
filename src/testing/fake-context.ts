/**
 * The capabilities a middleware under test gets from `testMiddleware`, as fakes a test
 * programs: model calls answered by a script (the `scripted` provider's replies: a list, or a
 * function of the request) and counted in the run's usage, artifacts in memory, and for the
 * rest a hook may reach (a middleware's own activities, tasks, sub-agents, sessions, the tree's
 * budget ledger) what the test passes, or a capability that fails saying which option provides
 * it. Node side, but imports nothing of Temporal: it runs in plain vitest, without a server.
 */
import { artifactStore, type Artifact, type ArtifactStore } from '../core/artifacts';
import { KeelError } from '../core/errors';
import { type ModelRequest, type ModelResponse } from '../core/messages';
import { addUsage, checkedUsage, type Usage } from '../core/usage';
import { throughDoor } from '../middleware/activity-door';
import { scriptedModel, type Script } from '../models/scripted';
import type { MiddlewareContext } from '../middleware/types';
import { provide, runArtifacts, runCapabilities, type CapabilityCall } from '../middleware/run-capability';
import { backgroundTasks, sessionRuns, subAgentRuns, type AgentRunner, type SessionRunner, type TaskControl } from '../features/agents/capabilities';
import { treeLedger, type TreeLedger } from '../features/budget/ledger-door';

/** What the fake capabilities are made of; every field is optional. */
export interface FakeCapabilityOptions {
  /**
   * Replies to the run's model calls (a middleware's own `context.callModel`, and the model
   * behind `callModel` and `generate` of the harness), in the order the calls are made,
   * whichever model a call names: a list (an entry may be a function of the request) or one
   * function for every call, built with `textReply`, `toolCallReply`, `errorReply`. Each
   * reply's usage counts in `usage()`. Absent: a model call fails saying so.
   */
  model?: Script;
  /** What the run had spent before the harness's model calls (counted by `usage()`). */
  usage?: Usage;
  /** The artifacts the run starts with. */
  artifacts?: Artifact[];
  /** The run's id (the tree ledger's `runId`); default `harness-run`. */
  runId?: string;
  /**
   * What `context.activity(door, input)` runs, by the door's name (`files`, `skills`,
   * `countTokens`, a custom middleware's own): the input parsed by the door comes in, and the
   * answer is parsed by the door's output schema, as a worker does. A door not given fails saying so.
   */
  activities?: Record<string, (input: unknown) => Promise<unknown>>;
  /** The run's sub-agent runs (`context.capability(subAgentRuns)`); absent, a call fails saying so. */
  runAgent?: AgentRunner;
  /** The run's session runs (`context.capability(sessionRuns)`); absent, a call fails saying so. */
  invokeSession?: SessionRunner;
  /** The run's background tasks (`context.capability(backgroundTasks)`); absent, each of its methods fails saying so. */
  tasks?: TaskControl;
  /**
   * The tree's budget ledger (`context.capability(treeLedger)`); absent, a ledger that is off
   * (`enabled: false`: a Budget counts only this run's usage) whose methods fail saying so.
   */
  tree?: TreeLedger;
}

/** A model call the fake model was asked; `response` is absent when its reply was a failure. */
export interface RecordedModelCall {
  model: string;
  request: ModelRequest;
  response?: ModelResponse;
}

/** The fakes, and what they recorded. */
export interface FakeCapabilities {
  callModel: MiddlewareContext['callModel'];
  usage: () => Usage;
  /** Counts usage as if another model call of the run had spent it. */
  addUsage: (usage: Usage) => void;
  modelCalls: RecordedModelCall[];
  artifacts: ArtifactStore;
  activity: MiddlewareContext['activity'];
  /** The run's capabilities: the artifacts above, and the fakes of the options (or ones that fail saying which option provides them). */
  capability: CapabilityCall;
}

/** The error of a capability the test did not provide. */
function notProvided(capability: string, option: string): KeelError {
  return new KeelError('FAILED_PRECONDITION', `${capability} is not provided by the harness; pass options.${option} to testMiddleware`);
}

/** An async capability (`capability(key).method`, by the key's name) that rejects saying which option provides it. */
const rejects = (capability: string, option: string) => async (): Promise<never> => {
  throw notProvided(`context.capability(${capability})`, option);
};

/** A synchronous capability that throws saying which option provides it. */
const throws = (capability: string, option: string) => (): never => {
  throw notProvided(`context.capability(${capability})`, option);
};

/** Makes the fake capabilities of one harness. */
export function fakeCapabilities(options: FakeCapabilityOptions): FakeCapabilities {
  const { model: script, runId = 'harness-run' } = options;
  let usage: Usage = { ...(options.usage ?? {}) };
  const store: ArtifactStore = artifactStore({ artifacts: [...(options.artifacts ?? [])] });
  const modelCalls: RecordedModelCall[] = [];

  const callModel: MiddlewareContext['callModel'] = async (model, request) => {
    if (script === undefined) throw new KeelError('FAILED_PRECONDITION', `a model call to "${model}" found no replies; pass options.model to testMiddleware`);
    const call: RecordedModelCall = { model, request };
    const callIndex = modelCalls.push(call) - 1;
    // The scripted provider itself answers: its reply schema, its failures, its "script ran out" error.
    const response = await scriptedModel({ name: model, script }).generate(request, {
      callIndex,
      runId,
      heartbeat: () => undefined,
      signal: new AbortController().signal,
    });
    // Checked as the model activity checks every provider's usage.
    const checked = { ...response, usage: checkedUsage(response.usage, { modelName: model }) };
    call.response = checked;
    usage = addUsage(usage, checked.usage, `the usage model "${model}" reported`);
    return checked;
  };

  return {
    callModel,
    usage: () => usage,
    addUsage: (spent) => {
      usage = addUsage(usage, spent);
    },
    modelCalls,
    artifacts: store,
    activity: async (door, input) => {
      const fake = options.activities?.[door.name];
      if (!fake) throw notProvided(`context.activity(${door.name})`, `activities.${door.name}`);
      return throughDoor(door, input, fake);
    },
    capability: runCapabilities([
      provide(runArtifacts, () => store),
      provide(subAgentRuns, () => options.runAgent ?? rejects('subAgentRuns', 'runAgent')),
      provide(sessionRuns, () => options.invokeSession ?? rejects('sessionRuns', 'invokeSession')),
      provide(
        backgroundTasks,
        () =>
          options.tasks ?? {
            start: rejects('backgroundTasks.start', 'tasks'),
            records: throws('backgroundTasks.records', 'tasks'),
            inspect: rejects('backgroundTasks.inspect', 'tasks'),
            wait: rejects('backgroundTasks.wait', 'tasks'),
            abort: rejects('backgroundTasks.abort', 'tasks'),
            prove: rejects('backgroundTasks.prove', 'tasks'),
            reachable: rejects('backgroundTasks.reachable', 'tasks'),
            follow: rejects('backgroundTasks.follow', 'tasks'),
          },
      ),
      provide(
        treeLedger,
        () =>
          options.tree ?? {
            enabled: false,
            runId,
            usage: throws('treeLedger.usage', 'tree'),
            toldFromBelow: throws('treeLedger.toldFromBelow', 'tree'),
            serve: throws('treeLedger.serve', 'tree'),
            join: throws('treeLedger.join', 'tree'),
            ask: rejects('treeLedger.ask', 'tree'),
          },
      ),
    ]),
  };
}
