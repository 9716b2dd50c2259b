/**
 * Big payloads (issue 10): with External Storage (the file driver, keel's default) a 5 MiB
 * tool output and a 3 MiB prompt go through a run and history keeps references; without it,
 * an input over the server's limit is refused before it is sent and an output over it fails
 * at once, naming the tool.
 */
import { temporal } from '@temporalio/proto';
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../src/define';
import { scriptedModel, textReply, toolCallReply } from '../src/models/scripted';
import { Registry } from '../src/registry';
import { blob } from './fixtures/tools';
import { sharedTestWorker } from './support/harness';

const MiB = 1024 * 1024;

/** Bytes of a run's history as the server stores it. */
async function historyBytes(client: import('@temporalio/client').Client, runId: string): Promise<number> {
  const history = await client.workflow.getHandle(runId).fetchHistory();
  return temporal.api.history.v1.History.encode(history).finish().length;
}

/** Total bytes of the files under a directory. */
function storedBytes(directory: string): number {
  let total = 0;
  for (const entry of readdirSync(directory, { withFileTypes: true, recursive: true }))
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  return total;
}

describe.concurrent('with External Storage (file driver)', () => {
  const directory = mkdtempSync(join(tmpdir(), 'keel-payloads-'));
  const model = scriptedModel({
    name: 'scripted/large',
    script: [toolCallReply({ name: 'blob', input: { size: 5 * MiB } }), textReply('got it')],
  });
  const reader = scriptedModel({ name: 'scripted/large-prompt', script: [textReply('read it')] });
  const registry = new Registry().add(
    blob,
    model,
    reader,
    defineAgent({ name: 'large', model: model.name, tools: ['blob'] }),
    defineAgent({ name: 'large-prompt', model: reader.name }),
  );
  const worker = sharedTestWorker(registry, { externalStorage: { directory } });

  it('carries a 5 MiB tool output to the model; history keeps a reference', async () => {
    const { client } = worker();
    const handle = await client.start('large', 'fetch the blob');
    const result = await handle.result();
    expect(result.text).toBe('got it');
    const toolMessage = result.messages.find((message) => message.role === 'tool')!;
    const output = (toolMessage.content[0] as { toolResponse: { output: { data: string } } }).toolResponse.output;
    expect(output.data).toHaveLength(5 * MiB);
    // The second model call saw the whole output (its request is read by reference, in pages).
    expect(JSON.stringify(model.requests[1]!.request.messages)).toContain('x'.repeat(1000));
    expect(model.requests[1]!.request.messages.some((message) => message.role === 'tool')).toBe(true);
    expect(await historyBytes(client.temporal, handle.runId)).toBeLessThan(256 * 1024);
    expect(storedBytes(directory)).toBeGreaterThan(5 * MiB);
  });

  it('takes a 3 MiB prompt through the client', async () => {
    const { client } = worker();
    const prompt = 'p'.repeat(3 * MiB);
    const handle = await client.start('large-prompt', prompt);
    const result = await handle.result();
    expect(result.text).toBe('read it');
    expect(reader.requests[0]!.request.messages.at(-1)!.content[0]).toEqual({ text: prompt });
    expect(await historyBytes(client.temporal, handle.runId)).toBeLessThan(256 * 1024);
  });
});

// The refusal is timed (under 2 s): these run one after another, with nothing beside them.
describe('without External Storage', () => {
  const model = scriptedModel({ name: 'scripted/inline', script: [toolCallReply({ name: 'blob', input: { size: 2_200_000 } })] });
  const registry = new Registry().add(blob, model, defineAgent({ name: 'inline', model: model.name, tools: ['blob'] }));
  const worker = sharedTestWorker(registry, { externalStorage: { driver: 'none' } });

  it('refuses a prompt over 2 MiB before sending it, naming the run and the size', async () => {
    const { client } = worker();
    const started = Date.now();
    const attempt = client.start('inline', 'p'.repeat(3 * MiB), { runId: 'too-big-prompt' });
    await expect(attempt).rejects.toMatchObject({ status: 'OUT_OF_RANGE' });
    await expect(attempt).rejects.toThrow(
      /the input of run too-big-prompt \(agent "inline"\) is 3\.00 MiB, over the 1\.94 MiB limit of one payload \(External Storage is off/,
    );
    expect(Date.now() - started).toBeLessThan(2000);
    await expect(client.temporal.workflow.getHandle('too-big-prompt').describe()).rejects.toThrow(/not found/i);
  });

  it('fails a tool output over 2 MiB at once, naming the tool and the size', async () => {
    const { client } = worker();
    const handle = await client.start('inline', 'fetch');
    await expect(handle.result()).rejects.toThrow(/the output of tool "blob" is 2\.10 MiB, over the 1\.94 MiB limit of one payload/);
  });
});
