/**
 * External Storage on S3 (issue 10): the official driver against a real S3-compatible server
 * (s3rver, on loopback) started by the test. A run with a 3 MiB tool output completes, its
 * history keeps references, and the payloads are objects in the bucket.
 */
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { temporal } from '@temporalio/proto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { blob } from './fixtures/tools';
import { freePort } from './support/free-port';
import { startTestWorker, type TestWorker } from './support/harness';

const BUCKET = 'keel-payloads';
const MiB = 1024 * 1024;

let server: S3rver;
let endpoint: string;
let worker: TestWorker;
const model = scriptedModel({ name: 'scripted/s3', script: [toolCallReply({ name: 'blob', input: { size: 3 * MiB } }), textReply('stored')] });
const registry = new Registry().add(blob, model, defineAgent({ name: 's3', model: model.name, tools: ['blob'] }));

beforeAll(async () => {
  const port = await freePort();
  server = new S3rver({
    port,
    address: '127.0.0.1',
    silent: true,
    directory: mkdtempSync(join(tmpdir(), 'keel-s3-')),
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  await server.run();
  endpoint = `http://127.0.0.1:${port}`;
  // s3rver's credentials, read by the AWS SDK's default chain in the worker and client.
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
  worker = await startTestWorker(registry, { externalStorage: { driver: 's3', s3: { bucket: BUCKET, endpoint, forcePathStyle: true } } });
});

afterAll(async () => {
  await worker?.stop();
  await server?.close();
});

describe('External Storage on S3', () => {
  it('stores a 3 MiB tool output in the bucket and history keeps a reference', async () => {
    const handle = await worker.client.start('s3', 'fetch the blob');
    const result = await handle.result();
    expect(result.text).toBe('stored');
    const output = (result.messages.find((message) => message.role === 'tool')!.content[0] as { toolResponse: { output: { data: string } } }).toolResponse
      .output;
    expect(output.data).toHaveLength(3 * MiB);
    const history = await worker.client.temporal.workflow.getHandle(handle.runId).fetchHistory();
    expect(temporal.api.history.v1.History.encode(history).finish().length).toBeLessThan(256 * 1024);
    const s3 = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true });
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET }));
    const keys = (listed.Contents ?? []).map((object) => object.Key ?? '');
    expect(keys.some((key) => key.includes(`/wi/${handle.runId}/`))).toBe(true);
    expect(Math.max(...(listed.Contents ?? []).map((object) => object.Size ?? 0))).toBeGreaterThan(3 * MiB);
  });
});
