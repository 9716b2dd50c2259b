/**
 * Temporal's run listing, run by run: the SDK's `workflow.list()` decodes every listed run's memo
 * and throws for the whole listing when one cannot be decoded (a run sealed with an encryption
 * key this process lacks: another project's in the namespace, or one from before a key was
 * dropped). Here such a run is listed without its memo and the others are unaffected. Node side.
 */
import { ServiceError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import { executionInfoFromRaw } from '@temporalio/client/lib/helpers';
import { extstoreInboundOptions, visit, walkListWorkflowExecutionsResponse } from '@temporalio/common/lib/internal-non-workflow';
import type { temporal } from '@temporalio/proto';

/** The runs `query` lists, as `workflow.list()` gives them; a run whose memo this process cannot read comes without it. */
export async function* listExecutions(client: Client, { query, pageSize }: { query?: string; pageSize?: number } = {}): AsyncGenerator<WorkflowExecutionInfo> {
  const converter = client.options.loadedDataConverter;
  const namespace = client.options.namespace;
  let nextPageToken: Uint8Array = Buffer.alloc(0);
  for (;;) {
    let response: temporal.api.workflowservice.v1.ListWorkflowExecutionsResponse;
    try {
      response = await client.workflowService.listWorkflowExecutions({
        namespace,
        ...(query !== undefined ? { query } : {}),
        ...(pageSize ? { pageSize } : {}),
        nextPageToken,
      });
    } catch (error) {
      throw new ServiceError('Failed to list workflows', { cause: error as Error });
    }
    await visit(response, walkListWorkflowExecutionsResponse, extstoreInboundOptions(converter.externalStorage));
    for (const raw of response.executions) {
      let info: WorkflowExecutionInfo;
      try {
        info = await executionInfoFromRaw(raw, converter, raw, namespace);
      } catch {
        // The listing's own message: its memo dropped, the rest (defaults on the message's prototype included) kept.
        raw.memo = null;
        info = await executionInfoFromRaw(raw, converter, raw, namespace);
      }
      yield info;
    }
    if (!response.nextPageToken?.length) return;
    nextPageToken = response.nextPageToken;
  }
}
