/**
 * The capabilities a middleware under test gets from `testMiddleware`, as fakes a test
 * programs: model calls answered by a script (the `scripted` provider's replies: a list, or a
 * function of the request) and counted in the run's usage, artifacts in memory, and for the
 * rest a hook may reach (a middleware's own activities, tasks, sub-agents, sessions, the tree's
 * budget ledger) what the test passes, or a capability that fails saying which option provides
 * it. Node side, but imports nothing of Temporal: it runs in plain vitest, without a server.
 */
import { putArtifact, type Artifact } from '../core/artifacts';
import { KeelError } from '../core/errors';
import { type ModelRequest, type ModelResponse } from '../core/messages';
import { addUsage, checkedUsage, type Usage } from '../core/usage';
import { throughDoor } from '../middleware/activity-door';
import { scriptedModel, type Script } from '../models/scripted';
import type { ArtifactStore, MiddlewareContext, TaskControl, TreeLedger } from '../middleware/types';

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
  /** `context.runAgent`; absent, a call fails saying so. */
  runAgent?: MiddlewareContext['runAgent'];
  /** `context.invokeSession`; absent, a call fails saying so. */
  invokeSession?: MiddlewareContext['invokeSession'];
  /** `context.tasks`; absent, each of its methods fails saying so. */
  tasks?: TaskControl;
  /**
   * `context.tree`; absent, a ledger that is off (`enabled: false`: a Budget counts only this
   * run's usage) whose methods fail saying so.
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
  runAgent: MiddlewareContext['runAgent'];
  invokeSession: MiddlewareContext['invokeSession'];
  tasks: TaskControl;
  tree: TreeLedger;
}

/** The error of a capability the test did not provide. */
function notProvided(capability: string, option: string): KeelError {
  return new KeelError('FAILED_PRECONDITION', `context.${capability} is not provided by the harness; pass options.${option} to testMiddleware`);
}

/** An async capability that rejects saying which option provides it. */
const rejects =
  (capability: string, option = capability.split('.')[0]!) =>
  async (): Promise<never> => {
    throw notProvided(capability, option);
  };

/** A synchronous capability that throws saying which option provides it. */
const throws =
  (capability: string, option = capability.split('.')[0]!) =>
  (): never => {
    throw notProvided(capability, option);
  };

/** Makes the fake capabilities of one harness. */
export function fakeCapabilities(options: FakeCapabilityOptions): FakeCapabilities {
  const { model: script, runId = 'harness-run' } = options;
  let usage: Usage = { ...(options.usage ?? {}) };
  let artifacts: Artifact[] = [...(options.artifacts ?? [])];
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
    artifacts: {
      list: () => artifacts,
      get: (name) => artifacts.find((artifact) => artifact.name === name),
      put: (artifact) => {
        artifacts = putArtifact(artifacts, artifact);
      },
    },
    activity: async (door, input) => {
      const fake = options.activities?.[door.name];
      if (!fake) throw notProvided(`activity(${door.name})`, `activities.${door.name}`);
      return throughDoor(door, input, fake);
    },
    runAgent: options.runAgent ?? rejects('runAgent'),
    invokeSession: options.invokeSession ?? rejects('invokeSession'),
    tasks: options.tasks ?? {
      start: rejects('tasks.start'),
      records: throws('tasks.records'),
      inspect: rejects('tasks.inspect'),
      wait: rejects('tasks.wait'),
      abort: rejects('tasks.abort'),
      prove: rejects('tasks.prove'),
      reachable: rejects('tasks.reachable'),
      follow: rejects('tasks.follow'),
    },
    tree: options.tree ?? {
      enabled: false,
      runId,
      usage: throws('tree.usage'),
      toldFromBelow: throws('tree.toldFromBelow'),
      serve: throws('tree.serve'),
      join: throws('tree.join'),
      ask: rejects('tree.ask'),
    },
  };
}
