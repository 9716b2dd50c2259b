/**
 * One turn of a sub-agent's session, sent by a run (a delegation to a server-managed agent):
 * the session's `invoke` update with update-with-start, waited for while heartbeating. The
 * update id comes from the run, so a retried activity attaches to the same turn instead of
 * sending another. Node side.
 */
import { Context } from '@temporalio/activity';
import { ServiceError, WithStartWorkflowOperation, isGrpcServiceError, type Client } from '@temporalio/client';
import { sessionWorkflowId, type InvokeOutput, type InvokeSessionInput } from '../../../core/session';
import { KeelError } from '../../../core/errors';
import { principalMemo } from '../../../core/principal';
import { runErrorOf } from '../../../node/run-errors';
import { SESSION_WORKFLOW, invokeUpdate } from '../../../core/protocol';
import { retryingUpdate } from '../../../node/update-retry';
import { withHeartbeat } from '../../../activities/heartbeat';
import { InfrastructureError } from '../../../activities/infrastructure-error';

/** The `invokeSession` activity. */
export async function invokeSession(client: Client, { agent, sessionId, invoke, updateId, principal }: InvokeSessionInput): Promise<InvokeOutput> {
  const memo = principalMemo(principal);
  return withHeartbeat(async () => {
    try {
      // The server's transient refusals are retried as every client retries them; what still fails is the activity's to retry.
      return await retryingUpdate(
        () =>
          client.workflow.executeUpdateWithStart(invokeUpdate, {
            args: [invoke],
            updateId,
            startWorkflowOperation: new WithStartWorkflowOperation(SESSION_WORKFLOW, {
              workflowId: sessionWorkflowId(agent, sessionId),
              taskQueue: Context.current().info.taskQueue,
              args: [{ agent, sessionId }],
              workflowIdConflictPolicy: 'USE_EXISTING',
              // A session an agent starts goes with the caller's priority and tenant's share, as a child workflow would.
              ...(Context.current().info.priority ? { priority: Context.current().info.priority } : {}),
              ...(Object.keys(memo).length ? { memo } : {}),
            }),
          }),
        { what: `the turn sent to session "${sessionId}" of agent "${agent}"` },
      );
    } catch (error) {
      // Temporal could not be reached, or kept refusing the update: retried by the activity's policy (the update id makes it the same turn).
      const unavailable = KeelError.isInstance(error) && error.status === 'UNAVAILABLE';
      if (error instanceof ServiceError || isGrpcServiceError(error) || unavailable)
        throw new InfrastructureError(`could not send a turn to session "${sessionId}" of agent "${agent}": ${(error as Error).message}`);
      throw runErrorOf(error);
    }
  });
}
