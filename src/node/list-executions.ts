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

/** How a listing is kept to what one may read: a visibility clause to AND in, and the check each listed run passes too. */
export interface ListScope {
  /** A clause of the visibility query (absent: the rules let this identity read any run); `false`: it may read none. */
  clause: string | false | undefined;
  /** Whether a listed run (by its memo) may be shown: the guarantee, whatever the clause let through. */
  admits(memo: Record<string, unknown> | undefined): boolean;
}

/** Options of `listExecutions`. */
export interface ListExecutionsOptions {
  query?: string;
  pageSize?: number;
  /** Lists only the runs an identity may read (security/access.ts): its clause ANDed to `query`, and each run checked by its memo. */
  scope?: ListScope | undefined;
}

/**
 * The runs `query` lists, as `workflow.list()` gives them; a run whose memo this process cannot
 * read comes without it. With a `scope`, only the runs it admits: its clause is ANDed to the
 * query (a namespace without KeelTenant and KeelOwner lists without it), and every run is
 * checked by its memo whatever the query let through.
 */
export async function* listExecutions(client: Client, { query, pageSize, scope }: ListExecutionsOptions = {}): AsyncGenerator<WorkflowExecutionInfo> {
  if (scope?.clause === false) return;
  const scoped = scope?.clause ? (query !== undefined ? `(${query}) AND (${scope.clause})` : scope.clause) : query;
  try {
    yield* listed(client, scoped, pageSize, scope);
  } catch (error) {
    // Without keel's principal attributes the clause is refused before any run is listed: then each run's memo alone decides.
    if (scoped === query || !(error instanceof ServiceError) || !/KeelTenant|KeelOwner/.test(`${error.message} ${error.cause?.message ?? ''}`)) throw error;
    yield* listed(client, query, pageSize, scope);
  }
}

async function* listed(
  client: Client,
  query: string | undefined,
  pageSize: number | undefined,
  scope: ListScope | undefined,
): AsyncGenerator<WorkflowExecutionInfo> {
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
      if (scope && !scope.admits(info.memo)) continue;
      yield info;
    }
    if (!response.nextPageToken?.length) return;
    nextPageToken = response.nextPageToken;
  }
}
