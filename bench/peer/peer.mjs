// Runs the peer (Node >= 22.12): a worker with @temporalio/ai-sdk and a scripted model against
// the server at argv[2]. After a warm-up it prints `ready`, then runs one N-turn loop for each
// `run` line read on stdin and prints its figures as one JSON line, so bench/peer.ts can pair
// each keel run with a peer run under the same load. Its stdin closing ends it.
import { Client, Connection } from '@temporalio/client';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { NativeConnection, Worker, DefaultLogger, Runtime } from '@temporalio/worker';
import proto from '@temporalio/proto';
const { temporal } = proto;
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const [address, turnsArg] = process.argv.slice(2);
const turns = Number(turnsArg ?? 16);
Runtime.install({ logger: new DefaultLogger('ERROR') });

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const model = {
  specificationVersion: 'v4',
  provider: 'scripted',
  modelId: 'scripted',
  supportedUrls: {},
  async doGenerate(options) {
    const done = options.prompt
      .filter((message) => message.role === 'tool')
      .flatMap((message) => message.content)
      .filter((part) => part.type === 'tool-result').length;
    if (done < turns) {
      return {
        content: [{ type: 'tool-call', toolCallId: `call-${done}`, toolName: 'chunk', input: JSON.stringify({ turn: done }) }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      };
    }
    return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
  },
  async doStream() {
    throw new Error('not scripted');
  },
};
const provider = {
  specificationVersion: 'v4',
  languageModel: () => model,
  embeddingModel: () => {
    throw new Error('none');
  },
  imageModel: () => {
    throw new Error('none');
  },
};

const taskQueue = `peer-${Date.now()}`;
const connection = await NativeConnection.connect({ address });
const worker = await Worker.create({
  connection,
  taskQueue,
  workflowsPath: fileURLToPath(new URL('./workflows.mjs', import.meta.url)),
  activities: { chunk: async ({ turn }) => ({ turn, data: 'x'.repeat(20 * 1024) }) },
  plugins: [new AiSdkPlugin({ modelProvider: provider })],
});
const running = worker.run();
const client = new Client({ connection: await Connection.connect({ address }) });
try {
  await client.workflow.execute('peerLoop', { taskQueue, workflowId: `peer-warmup-${Date.now()}`, args: [2] });
  console.log('ready');
  let rep = 0;
  // The history is fetched once, at the first run (a warm-up pair): its 3 MiB parse and garbage stay out of the pairs measured.
  let historyBytes;
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() !== 'run') continue;
    const workflowId = `peer-${rep++}-${Date.now()}`;
    const cpu = process.cpuUsage();
    const started = Date.now();
    const text = await client.workflow.execute('peerLoop', { taskQueue, workflowId, args: [turns] });
    const wallMs = Date.now() - started;
    const used = process.cpuUsage(cpu);
    if (text !== 'done') throw new Error(`peer answered ${text}`);
    historyBytes ??= temporal.api.history.v1.History.encode(await client.workflow.getHandle(workflowId).fetchHistory()).finish().length;
    console.log(JSON.stringify({ node: process.version, turns, wallMs, cpuMs: (used.user + used.system) / 1000, historyBytes }));
  }
} finally {
  worker.shutdown();
  await running;
}
process.exit(0);
