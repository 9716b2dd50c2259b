/**
 * The capabilities a middleware under test gets from `testMiddleware`, as fakes a test
 * programs: model calls answered by a script (the `scripted` provider's replies: a list, or a
 * function of the request) and counted in the run's usage, artifacts in memory, and a
 * middleware's own activities as the test passes them (one it did not fails saying which option
 * provides it). What only a run lends a built-in (Agents' child runs, Budget's ledgers) is not
 * faked: those say they need a run. Node side, but imports nothing of Temporal: it runs in plain vitest, without a server.
 */
import { artifactStore, type Artifact, type ArtifactStore } from '../core/artifacts';
import { KeelError } from '../core/errors';
import { type ModelRequest, type ModelResponse } from '../core/messages';
import { addUsage, checkedUsage, type Usage } from '../core/usage';
import { throughDoor } from '../middleware/activity-door';
import { scriptedModel, type Script } from '../models/scripted';
import type { MiddlewareContext } from '../middleware/types';

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
  /** The run's id (what the scripted model is told); default `harness-run`. */
  runId?: string;
  /**
   * What `context.activity(door, input)` runs, by the door's name (`files`, `skills`,
   * `countTokens`, a custom middleware's own): the input parsed by the door comes in, and the
   * answer is parsed by the door's output schema, as a worker does. A door not given fails saying so.
   */
  activities?: Record<string, (input: unknown) => Promise<unknown>>;
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
}

/** The error of a fake the test did not provide. */
function notProvided(what: string, option: string): KeelError {
  return new KeelError('FAILED_PRECONDITION', `${what} is not provided by the harness; pass options.${option} to testMiddleware`);
}

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
  };
}
