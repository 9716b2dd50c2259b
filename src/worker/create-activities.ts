/**
 * The activities of a keel worker: every piece of I/O a run does, each in a file of its own
 * (resolve-agent, call-model, call-tool; each feature's behind its doors, from
 * src/features/activities.ts). Built from a registry
 * (what the worker knows), the config (timeouts), and a Temporal client (to read a model
 * request back from its run). Errors leave as ApplicationFailure with the status as type:
 * application outcomes non-retryable, infrastructure failures (InfrastructureError: Temporal
 * could not be reached) retryable by the activity's retry policy.
 */
import { assertCalledByRun } from '../activities/called-by-run';
import { asActivity, type ActivityDependencies, type IndexedAttributes, type WorkerScope } from '../activities/worker-scope';
import { hasSearchAttributes, resolveAgent } from '../activities/resolve-agent';
import { callModel } from '../activities/call-model';
import { callTool, validateToolOutput } from '../activities/call-tool';
import { inlinePayloadLimit, payloadLimit } from '../activities/payload-limit';
import { DEFAULT_MODEL_REQUEST_TIMEOUT } from '../activities/read-model-request';
import { FEATURE_ACTIVITIES } from '../features/activities';
import type { CoreActivities } from '../engine/activities';
import type { SignProofsInput, VerifyProofsInput } from '../core/proofs';
import { loadSigningKeys, type SigningKeys } from '../security/signing-keys';

export type { ActivityDependencies } from '../activities/worker-scope';

/** Builds the activity implementations for one worker: the core ones, and each feature's (src/features/activities.ts) under its door's name. */
export function createActivities({
  registry,
  config,
  client,
  signingKeys,
  modelRequestTimeout = DEFAULT_MODEL_REQUEST_TIMEOUT,
}: ActivityDependencies): CoreActivities & Record<string, (input: never) => Promise<unknown>> {
  const notRegisteredRetryFor = config.worker?.notRegisteredRetryFor ?? '1 minute';
  let keys = signingKeys;
  const proofKeys = (): SigningKeys =>
    (keys ??= loadSigningKeys({ security: config.security ?? { signingKeyFile: '.keel/signing-key' }, baseDir: config.baseDir ?? process.cwd() }));
  const dependencies = { client, registry, config, keys: proofKeys };
  // What a feature's activities must have of the worker is checked now, not at their first call (notify's webhook secrets).
  for (const { check } of FEATURE_ACTIVITIES) check?.(dependencies);
  let searchAttributes: Promise<IndexedAttributes> | undefined;
  const scope: WorkerScope = {
    registry,
    config,
    client,
    modelRequestTimeout,
    limit: payloadLimit(config.externalStorage),
    inlineLimit: inlinePayloadLimit(config.externalStorage),
    activity: (work, refusedBefore) => asActivity(work, { retryFor: notRegisteredRetryFor, client, refusedBefore }),
    searchAttributes: () => (searchAttributes ??= hasSearchAttributes(client)),
  };
  const { activity } = scope;

  const signProofs = ({ subjects }: SignProofsInput): Promise<string[]> =>
    activity(async () => {
      assertCalledByRun('signProofs');
      return subjects.map((subject) => proofKeys().sign(subject));
    });

  const verifyProofs = ({ claims }: VerifyProofsInput): Promise<boolean[]> =>
    activity(async () => {
      assertCalledByRun('verifyProofs');
      return claims.map(({ subject, proof }) => proofKeys().verify(subject, proof));
    });

  return {
    resolveAgent: (input) => resolveAgent(scope, input),
    signProofs,
    verifyProofs,
    callModel: (input) => callModel(scope, input),
    callTool: (input) => callTool(scope, input),
    validateToolOutput: (input) => validateToolOutput(scope, input),
    // Each feature's own activities, under their doors' names.
    ...Object.fromEntries(FEATURE_ACTIVITIES.map(({ name, call }) => [name, (input: unknown) => activity(() => call(input, dependencies))])),
  };
}
