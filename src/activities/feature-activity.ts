/**
 * The Node half of a feature's activity door (src/middleware/activity-door.ts): what runs when
 * the middleware calls `context.activity(door, input)`. The worker registers each
 * implementation under its door's name; the input is parsed with the door's input schema before
 * `run` sees it, the answer with its output schema before it leaves. Node side.
 */
import type { Client } from '@temporalio/client';
import type { Registry } from '../registry';
import type { ActivityDependencies } from './worker-scope';
import type { z } from 'zod';
import { throughDoor, type ActivityDoor } from '../middleware/activity-door';
import { withHeartbeat } from './heartbeat';
import type { SigningKeys } from '../security/signing-keys';

/** What a feature's activities may use besides their input. */
export interface FeatureActivityDependencies {
  /** The worker's Temporal client (to reach other runs: a task's state, a session's turn). */
  client: Client;
  /** What the worker registered (a judge's model). */
  registry?: Registry;
  /** The worker's config, as its activities have it (the tenants metrics name). */
  config?: ActivityDependencies['config'];
  /** The worker's signing keys (Notify signs its notices' decision links), loaded on first use. */
  keys: () => SigningKeys;
}

/** One activity of a feature, as its Node half implements it: what the worker registers under `name`. */
export interface ActivityImplementation {
  /** The door's name: the activity type. */
  name: string;
  /** One call: the input parsed with the door's input schema, the work, the answer parsed with its output schema. */
  call: (input: unknown, dependencies: FeatureActivityDependencies) => Promise<unknown>;
  /** Checks, when the worker builds its activities, what they will need of it (throws a ConfigError naming what is missing). */
  check?: (dependencies: FeatureActivityDependencies) => void;
}

/**
 * Implements a door: `implementActivity(filesDoor, (operation) => runFileOperation(operation), { heartbeat: true })`.
 * With `heartbeat`, the call heartbeats in the background while `run` works, so a worker that
 * dies mid-call is noticed within the heartbeat timeout.
 */
export function implementActivity<Input extends z.ZodType, Output extends z.ZodType>(
  door: ActivityDoor<Input, Output>,
  run: (input: z.output<Input>, dependencies: FeatureActivityDependencies) => Promise<z.input<Output>>,
  { heartbeat = false }: { heartbeat?: boolean } = {},
): ActivityImplementation {
  const call = (input: unknown, dependencies: FeatureActivityDependencies): Promise<z.output<Output>> =>
    throughDoor(door, input, (parsed) => (heartbeat ? withHeartbeat(() => run(parsed, dependencies)) : run(parsed, dependencies)));
  return { name: door.name, call };
}
