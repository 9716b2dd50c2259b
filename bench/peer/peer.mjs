// Runs the peer (Node >= 22.12): a worker with @temporalio/ai-sdk and a scripted model, then
// N-turn runs against the server at argv[2]; prints one JSON line of figures.
import { Client, Connection } from '@temporalio/client';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { NativeConnection, Worker, DefaultLogger, Runtime } from '@temporalio/worker';
import proto from '@temporalio/proto';
const { temporal } = proto;
import { fileURLToPath } from 'node:url';

const [address, turnsArg, repsArg] = process.argv.slice(2);
const turns = Number(turnsArg ?? 16);
const reps = Number(repsArg ?? 3);
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
const walls = [];
const cpus = [];
let historyBytes = 0;
try {
  await client.workflow.execute('peerLoop', { taskQueue, workflowId: `peer-warmup-${Date.now()}`, args: [2] });
  for (let rep = 0; rep < reps; rep++) {
    const workflowId = `peer-${rep}-${Date.now()}`;
    const cpu = process.cpuUsage();
    const started = Date.now();
    const text = await client.workflow.execute('peerLoop', { taskQueue, workflowId, args: [turns] });
    walls.push(Date.now() - started);
    const used = process.cpuUsage(cpu);
    cpus.push((used.user + used.system) / 1000);
    if (text !== 'done') throw new Error(`peer answered ${text}`);
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    historyBytes = temporal.api.history.v1.History.encode(history).finish().length;
  }
} finally {
  worker.shutdown();
  await running;
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(JSON.stringify({ node: process.version, turns, wallMs: median(walls), cpuMs: median(cpus), historyBytes }));
process.exit(0);
