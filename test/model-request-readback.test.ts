/**
 * A model request is read back from its run by query. When the run's workflow worker cannot
 * answer for longer than one read waits (hung, restarting, not started yet), the read goes on
 * trying for as long as the model activity's attempt allows, instead of failing the attempt at
 * the first unanswered query. Real server, real workers: the run's task queue has no workflow
 * worker at first, then gets one.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { readModelRequest } from '../src/activities/read-model-request';

const workflowsPath = join(__dirname, 'fixtures', 'request-holder-workflows.ts');
const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

async function runWorker(
  connection: NativeConnection,
  taskQueue: string,
  activities: Record<string, (...args: never[]) => Promise<unknown>> = {},
): Promise<void> {
  const worker = await Worker.create({ connection, taskQueue, workflowsPath, activities });
  const running = worker.run();
  stops.push(async () => {
    worker.shutdown();
    await running;
  });
}

describe('reading a model request back', () => {
  it('keeps trying while the run has no workflow worker to answer, and reads it once one starts', async () => {
    const address = inject('temporalAddress');
    const client = new Client({ connection: await Connection.connect({ address }) });
    const connection = await NativeConnection.connect({ address });
    stops.push(async () => {
      await connection.close();
      await client.connection.close();
    });
    const request = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'x'.repeat(20_000) }] }], tools: [] });
    const holderQueue = `holder-${randomUUID()}`;
    const readerQueue = `reader-${randomUUID()}`;
    const holderId = `holder-${randomUUID()}`;
    const holder = await client.workflow.start('requestHolder', { taskQueue: holderQueue, workflowId: holderId, args: [request] });
    stops.push(() =>
      holder.terminate().then(
        () => undefined,
        () => undefined,
      ),
    );
    await runWorker(connection, readerQueue, {
      probe: async (runId: string) =>
        JSON.stringify(
          await readModelRequest({
            client,
            input: { model: 'scripted/readback', requestKey: 'scripted/readback#0', runId, temporalRunId: holder.firstExecutionRunId },
            timeout: '1 second',
          }),
        ),
    });
    const reader = await client.workflow.start('readsRequest', { taskQueue: readerQueue, workflowId: `reader-${randomUUID()}`, args: [holderId] });
    // Several reads go unanswered (each waits 1 s): the attempt is still going.
    await new Promise((resolve) => setTimeout(resolve, 6000));
    expect((await reader.describe()).status.name).toBe('RUNNING');
    await runWorker(connection, holderQueue);
    expect(JSON.parse(await reader.result())).toEqual(JSON.parse(request));
  }, 90_000);
});
