/** Node side. */
import { Context } from '@temporalio/activity';
import { KeelError } from '../core/errors';
import { GENERATE_WORKFLOW, SESSION_WORKFLOW } from '../core/protocol';

/**
 * Refuses an activity that only keel's own workflow code may call (it signs what clients must
 * not forge) when it was not scheduled by a keel run: a standalone activity started by a client,
 * for one.
 */
export function assertCalledByRun(activity: string, workflows: readonly string[] = [GENERATE_WORKFLOW, SESSION_WORKFLOW]): void {
  const { workflowType, workflowExecution } = Context.current().info;
  if (!workflowExecution?.workflowId || !workflowType || !workflows.includes(workflowType)) {
    throw new KeelError(
      'PERMISSION_DENIED',
      `activity ${activity} runs only for keel's own runs (it was scheduled by ${workflowType ? `workflow type "${workflowType}"` : 'no workflow'})`,
    );
  }
}
