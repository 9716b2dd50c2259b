/**
 * Worker Versioning inside the workflow (docs/deploys.md, "Safe deploys"). A run declares its
 * behavior once, as it starts: the one its memo names (`keelVersioning`, set by the client
 * from `deployment.agents`, or handed down by the run that started it), else none, and the
 * worker's `deployment.defaultBehavior` applies. A session always moves to the current build
 * (its turns, child runs, are the ones pinned or not), so an idle session never holds an old
 * build and its next turn starts on the current one. A run that continues as new asks
 * Temporal to start the next run on the deployment's current build (upgrade on
 * continue-as-new), so a long run moves to new code at a turn boundary, never in the middle
 * of one. Runs in the workflow sandbox.
 */
import type { WorkflowDefinitionOptions } from '@temporalio/common';
import { makeContinueAsNewFunc, workflowInfo, type Workflow } from '@temporalio/workflow';
import { principalMemo, principalOfMemo } from '../core/principal';
import { versioningMemo, versioningOfMemo } from '../core/versioning';

/**
 * True when the worker running this task polls as a build of a Worker Deployment. Only such a
 * worker may declare a versioning behavior: Temporal refuses every workflow task of an
 * unversioned worker that declares one, so a memo (a client's config, or a forged one) must
 * never make a run declare it there.
 */
function onVersionedWorker(): boolean {
  // An unversioned worker reports its build id, but no deployment.
  return Boolean(workflowInfo().currentDeploymentVersion?.deploymentName);
}

/** The definition options of a keel workflow: its versioning behavior, from its memo (on a versioned worker). */
export function runVersioningOptions(): WorkflowDefinitionOptions {
  if (!onVersionedWorker()) return {};
  const chosen = versioningOfMemo(workflowInfo().memo);
  if (chosen === 'autoUpgrade') return { versioningBehavior: 'AUTO_UPGRADE' };
  if (chosen === 'pinned') return { versioningBehavior: 'PINNED' };
  return {};
}

/**
 * The definition options of a session: auto-upgrade on a versioned worker, whatever its memo
 * says (the memo is for its turns). A session's own code is keel's, changed only under
 * `patched()` (replayed by the recorded histories and by `keel deploy check`); the agent's code
 * runs in its turns, each a child run that starts on the build current when the turn begins,
 * and stays there when pinned.
 */
export function sessionVersioningOptions(): WorkflowDefinitionOptions {
  return onVersionedWorker() ? { versioningBehavior: 'AUTO_UPGRADE' } : {};
}

/**
 * The memo a run this run starts gets: it moves between builds the way this run does, and
 * belongs to whom this run belongs (its principal: docs/tenants.md).
 */
export function inheritedMemo(): { memo?: Record<string, unknown> } {
  const own = workflowInfo().memo;
  const memo = { ...versioningMemo(versioningOfMemo(own)), ...principalMemo(principalOfMemo(own)) };
  return Object.keys(memo).length ? { memo } : {};
}

/**
 * Continues as new, the next run starting on the deployment's current build (for an
 * unversioned worker, as a plain continue-as-new). Temporal servers without upgrade on
 * continue-as-new keep the next run on this run's build.
 */
export function continueOnCurrentBuild<F extends Workflow>(...args: Parameters<F>): Promise<never> {
  return makeContinueAsNewFunc<F>({ initialVersioningBehavior: 'AUTO_UPGRADE' })(...args);
}
