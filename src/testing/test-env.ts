/**
 * `createTestEnv`: a project's own agents under test, end to end: an embedded Temporal dev
 * server (or one the test already has), a keel worker in this process built from the project's
 * temporal.yaml and modules (its middleware modules bundled with the workflow, as `keel worker`
 * does), scripted models swapped in for real ones by name, and a client on a task queue of its
 * own. What a test asks of a run (its tool calls, its holds) is read back from the run itself.
 * Node side. The server is the `temporal` binary keel finds, or on a machine without one installs
 * once into the project's `.keel/bin` as `keel dev` does (the only time it needs the network).
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { KeelClient, type RunHandle, type StartRunOptions } from '../client/keel-client';
import { loadConfig, parseConfig } from '../config/load';
import type { KeelConfig, KeelConfigInput } from '../config/schema';
import type { DecisionAccepted } from '../core/holds';
import type { Message } from '../core/messages';
import type { Hold, RunResult } from '../core/run';
import type { Model } from '../define';
import type { Registry } from '../registry';
import { findTemporalBinary, startDevServer, type DevServer } from '../server/dev-server';
import { freePort } from '../node/ports';
import { connectClient, connectWorker } from '../worker/connect';
import { createKeelWorker } from '../worker/create-worker';
import { loadRegistry } from '../worker/load-registry';

/** Options of `createTestEnv`. */
export interface TestEnvOptions {
  /**
   * The project's config: a temporal.yaml path, or the config itself (relative module paths
   * then resolve from `baseDir`). Default: `./temporal.yaml` when there is one, else an empty
   * config.
   */
  config?: string | KeelConfigInput;
  /** Where relative paths of a config given as an object resolve from (default: the working directory). */
  baseDir?: string;
  /** Modules of agents, tools and models to load instead of the config's `modules`. */
  modules?: string[];
  /**
   * Models registered over the project's own, by name: a `scriptedModel` named like the real
   * model the agents use (`openai/gpt-4o-mini`) stands in for it, so no key and no network.
   */
  models?: Model[];
  /**
   * A Temporal server to use instead of starting one (`host:port`). Default: a dev server of
   * the environment's own, in memory, on a free loopback port, stopped by `close()`.
   */
  temporalAddress?: string;
  /** The `temporal` binary for the server started (default: the one `keel dev` would use, installed into the project's `.keel/bin` when there is none). */
  temporalBinary?: string;
  /** A prebuilt workflow bundle (a test suite that builds one once); built and cached under `.keel/cache` when absent. */
  bundlePath?: string;
  /** How long `expectHold` waits for a hold by default (default 10 s). */
  holdTimeoutMs?: number;
}

/** One tool call of a run, as its messages record it. */
export interface RecordedToolCall {
  name: string;
  input: unknown;
  /** The tool's output; absent while the call is held or running. */
  output?: unknown;
  ref?: string;
}

/** What `expectToolCalls` compares: a tool name, or a name with the input the call must have had. */
export type ExpectedToolCall = string | { name: string; input?: unknown };

/** What `expectHold` looks for; every field given must match. */
export interface HoldMatcher {
  toolName?: string;
  kind?: string;
  timeoutMs?: number;
}

/** A running test environment. */
export interface TestEnv {
  /** A client on the environment's task queue. */
  readonly client: KeelClient;
  /** The config the worker runs (its task queue is the environment's own). */
  readonly config: KeelConfig;
  /** The registry the worker serves: the project's agents, tools and models, with `models` over them. */
  readonly registry: Registry;
  /** Address of the Temporal server. */
  readonly temporalAddress: string;
  /** Starts a run and waits for its result. */
  run(agent: string, prompt: string | Message[], options?: StartRunOptions): Promise<RunResult & { runId: string }>;
  /** Starts a run and returns its handle at once (for a run that waits on a hold). */
  start(agent: string, prompt: string | Message[], options?: StartRunOptions): Promise<RunHandle>;
  /** The tool calls a run made, in order, with their outputs. */
  toolCalls(run: string | RunHandle): Promise<RecordedToolCall[]>;
  /** Throws, listing what the run called, unless its tool calls are these (names, or names and inputs), in order. */
  expectToolCalls(run: string | RunHandle, expected: ExpectedToolCall[]): Promise<RecordedToolCall[]>;
  /** Waits for a pending hold of the run that matches; throws, naming the holds it has, when none comes in time. */
  expectHold(run: string | RunHandle, matcher?: HoldMatcher): Promise<Hold>;
  /** Approves a hold (`expectHold` gives its id). */
  approve(run: string | RunHandle, holdId: string, reason?: string): Promise<DecisionAccepted>;
  /** Denies a hold. */
  deny(run: string | RunHandle, holdId: string, reason?: string): Promise<DecisionAccepted>;
  /** Decides a hold with a value its decision schema takes (sent as `restart`). */
  decide(run: string | RunHandle, holdId: string, value: Record<string, unknown> | true): Promise<DecisionAccepted>;
  /** Stops the worker, closes the connections and the registry, and stops the server it started. */
  close(): Promise<void>;
}

let runtimeInstalled = false;

/** Worker logs of warning level and above only: a test's output stays its own. */
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // The process installed a runtime already: keep it.
  }
}

function projectConfig({ config, baseDir = process.cwd(), modules }: Pick<TestEnvOptions, 'config' | 'baseDir' | 'modules'>, taskQueue: string): KeelConfig {
  let loaded: KeelConfig;
  if (typeof config === 'string') loaded = loadConfig({ path: resolve(baseDir, config), explicit: true });
  else if (config) loaded = parseConfig(config, { source: 'createTestEnv config', baseDir });
  else if (existsSync(resolve(baseDir, 'temporal.yaml'))) loaded = loadConfig({ path: resolve(baseDir, 'temporal.yaml'), explicit: true });
  else loaded = parseConfig({}, { source: 'createTestEnv config', baseDir });
  return { ...loaded, taskQueue, ...(modules ? { modules } : {}) };
}

/**
 * Starts a test environment for the project's agents: a dev server (unless `temporalAddress`
 * names one), a worker from its modules, and a client. Call `close()` when done (`afterAll`).
 */
export async function createTestEnv(options: TestEnvOptions = {}): Promise<TestEnv> {
  quietRuntime();
  const taskQueue = `keel-test-${randomUUID()}`;
  let config = projectConfig(options, taskQueue);
  let server: DevServer | undefined;
  const opened: Array<() => Promise<unknown>> = [];
  const closeAll = async () => {
    for (const close of opened.reverse()) await close().catch(() => undefined);
  };
  try {
    let address = options.temporalAddress;
    if (!address) {
      // Found, or installed into the project's .keel/bin, as keel dev does: a fresh machine's first npm test needs nothing else.
      const binary = options.temporalBinary ?? findTemporalBinary(config);
      server = await startDevServer({ binary, port: await freePort(), headless: true, namespace: config.temporal.namespace });
      opened.push(() => server!.stop());
      address = server.address;
    }
    config = { ...config, temporal: { ...config.temporal, address } };
    const registry = await loadRegistry(config);
    opened.push(() => registry.close());
    for (const model of options.models ?? []) registry.models.set(model.name, model);
    const [connection, temporal] = await Promise.all([connectWorker(config), connectClient(config)]);
    opened.push(
      () => connection.close(),
      () => temporal.connection.close(),
    );
    const worker = await createKeelWorker({
      config,
      registry,
      connection,
      client: temporal,
      ...(options.bundlePath ? { bundlePath: options.bundlePath } : {}),
    });
    const running = worker.run();
    opened.push(async () => {
      worker.shutdown();
      await running;
    });
    const client = new KeelClient({ temporal, taskQueue, fairness: config.fairness });
    return testEnv({ client, config, registry, address, holdTimeoutMs: options.holdTimeoutMs ?? 10_000, close: closeAll });
  } catch (error) {
    await closeAll();
    throw error;
  }
}

function testEnv({
  client,
  config,
  registry,
  address,
  holdTimeoutMs,
  close,
}: {
  client: KeelClient;
  config: KeelConfig;
  registry: Registry;
  address: string;
  holdTimeoutMs: number;
  close: () => Promise<void>;
}): TestEnv {
  const handleOf = (run: string | RunHandle): RunHandle => (typeof run === 'string' ? client.getHandle(run) : run);
  const toolCalls = async (run: string | RunHandle): Promise<RecordedToolCall[]> => recordedToolCalls(await handleOf(run).messages());
  return {
    client,
    config,
    registry,
    temporalAddress: address,
    async run(agent, prompt, options = {}) {
      const handle = await client.start(agent, prompt, options);
      return { ...(await handle.result()), runId: handle.runId };
    },
    start: (agent, prompt, options = {}) => client.start(agent, prompt, options),
    toolCalls,
    async expectToolCalls(run, expected) {
      const calls = await toolCalls(run);
      const matches =
        calls.length === expected.length &&
        expected.every((want, index) => {
          const call = calls[index]!;
          if (typeof want === 'string') return call.name === want;
          return call.name === want.name && (!('input' in want) || isDeepStrictEqual(call.input, want.input));
        });
      if (!matches) {
        const show = (list: unknown[]) => JSON.stringify(list);
        throw new Error(
          `run ${handleOf(run).runId}: expected tool calls ${show(expected)}, got ${show(calls.map((call) => ({ name: call.name, input: call.input })))}`,
        );
      }
      return calls;
    },
    async expectHold(run, { toolName, kind, timeoutMs = holdTimeoutMs } = {}) {
      const handle = handleOf(run);
      const deadline = Date.now() + timeoutMs;
      let pending: Hold[] = [];
      for (;;) {
        pending = (await handle.status()).interrupts;
        const found = pending.find((hold) => (toolName === undefined || hold.toolName === toolName) && (kind === undefined || hold.kind === kind));
        if (found) return found;
        if (Date.now() >= deadline) break;
        await new Promise((done) => setTimeout(done, 100));
      }
      const wanted = JSON.stringify({ ...(toolName !== undefined ? { toolName } : {}), ...(kind !== undefined ? { kind } : {}) });
      const has = pending.map((hold) => `${hold.id} (${hold.kind}${hold.toolName ? ` ${hold.toolName}` : ''})`).join(', ') || 'none';
      throw new Error(`run ${handle.runId}: no hold matching ${wanted} within ${timeoutMs} ms; pending holds: ${has}`);
    },
    approve: (run, holdId, reason) => handleOf(run).approve(holdId, reason !== undefined ? { reason } : {}),
    deny: (run, holdId, reason) => handleOf(run).deny(holdId, reason !== undefined ? { reason } : {}),
    decide: (run, holdId, value) => handleOf(run).restart(holdId, value),
    close,
  };
}

/** The tool calls in a run's messages, each with the output its response gave. */
export function recordedToolCalls(messages: Message[]): RecordedToolCall[] {
  const calls: RecordedToolCall[] = [];
  const byRef = new Map<string, RecordedToolCall>();
  for (const message of messages) {
    for (const part of message.content) {
      if ('toolRequest' in part) {
        const { name, input, ref } = part.toolRequest;
        const call: RecordedToolCall = { name, input, ...(ref !== undefined ? { ref } : {}) };
        calls.push(call);
        if (ref !== undefined) byRef.set(ref, call);
      } else if ('toolResponse' in part) {
        const { name, output, ref } = part.toolResponse;
        const call = (ref !== undefined ? byRef.get(ref) : undefined) ?? calls.find((candidate) => candidate.name === name && !('output' in candidate));
        if (call) call.output = output;
      }
    }
  }
  return calls;
}
