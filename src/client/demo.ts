/**
 * `keel demo` (what `npm start` runs): starts a dev server and a worker if none is
 * reachable, runs the demo agent, prints each turn and tool call as it happens, the final
 * answer, and where to inspect the run in the Temporal UI. Node side.
 */
import { createInterface } from 'node:readline/promises';
import type { KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import type { Interrupt } from '../core/run';
import { KeelClient, runErrorOf, type RunHandle } from './keel-client';
import { loadRegistry } from '../worker/load-registry';
import { describeRunningServer, ensureServer, prepareWorker } from './processes';
import { followRun, wantsColour } from './progress';

/** The agent and prompt the demo runs. */
export const DEMO_AGENT = 'trip-planner';
export const DEMO_PROMPT = 'Lisbon or Porto tomorrow? Compare the weather and tell me what a 25 EUR train ticket costs in USD.';

/** Resolves once `interruptId` no longer waits (decided by anyone) or the run has ended. */
async function decidedOrEnded(handle: RunHandle, interruptId: string, done: Promise<unknown>, signal: AbortSignal): Promise<void> {
  let ended = false;
  void done.then(
    () => (ended = true),
    () => (ended = true),
  );
  while (!ended && !signal.aborted) {
    const waiting = await handle.pendingInterrupts().then(
      (pending) => pending.some((interrupt) => interrupt.id === interruptId),
      () => true, // no answer now (between workers): ask again
    );
    if (!waiting) return;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

/**
 * Decides a hold of the demo run: asks at a terminal, approves on its own otherwise (CI,
 * pipes), saying so. Prints the same instructions `keel run` gives. The question gives way
 * to a decision made elsewhere (`keel approve` in another terminal, another client) and to
 * the run's end, so it never blocks the run or answers a decided hold.
 */
async function decide(handle: RunHandle, interrupt: Interrupt, done: Promise<unknown>, say: (line: string) => void): Promise<void> {
  say(
    `  ⏸ ${interrupt.toolName}(${JSON.stringify(interrupt.input ?? {})}) needs approval (${interrupt.message ?? interrupt.kind}); the run waits durably for it`,
  );
  say(`    (from anywhere: npx keel approve ${handle.runId} ${interrupt.id}   or   npx keel deny ${handle.runId} ${interrupt.id})`);
  let approved = true;
  if (process.stdin.isTTY && process.stdout.isTTY) {
    const stop = new AbortController();
    const prompt = createInterface({ input: process.stdin, output: process.stdout });
    try {
      const answer = await Promise.race([
        // Aborted once the race is over; closed input (Ctrl-D) counts as no.
        prompt.question(`    approve ${interrupt.toolName}? [y/N] `, { signal: stop.signal }).then(
          (text) => ({ text }),
          () => (stop.signal.aborted ? undefined : { text: '' }),
        ),
        decidedOrEnded(handle, interrupt.id, done, stop.signal).then(() => undefined),
      ]);
      if (!answer) {
        process.stdout.write('\n');
        say(`    ${interrupt.id} was decided elsewhere (or the run ended); the run goes on`);
        return;
      }
      approved = /^y(es)?$/i.test(answer.text.trim());
    } finally {
      stop.abort();
      prompt.close();
    }
  } else {
    say('    not a terminal: approving automatically');
  }
  try {
    if (approved) await handle.approve(interrupt.id);
    else await handle.deny(interrupt.id, { reason: 'the user said no in the demo' });
    say(`    ${approved ? 'approved' : 'denied'} ${interrupt.id}`);
  } catch (error) {
    // decided elsewhere meanwhile (keel approve from another terminal)
    say(`    ${runErrorOf(error).message}`);
  }
}

/** Runs the demo end to end; resolves to the exit code. */
export async function runDemo(config: KeelConfig): Promise<number> {
  const say = (line: string) => process.stdout.write(`${line}\n`);
  say('keel demo: an agent run as a durable Temporal workflow');
  const registry = await loadRegistry(config);
  if (!registry.agents.has(DEMO_AGENT)) {
    // The demo's agent lives in a keel checkout's examples/agents.ts, not in a project that installed keel.
    say(
      `demo failed: the demo runs the "${DEMO_AGENT}" agent of a keel checkout (examples/agents.ts); the config in ${config.baseDir} registers: ${[...registry.agents.keys()].sort().join(', ') || '(no agents)'}. Run one of yours with \`npx keel run <agent> "<prompt>"\`.`,
    );
    return 1;
  }
  const server = await ensureServer(config, { command: 'keel demo' });
  say(
    server ? `· started a Temporal dev server at ${server.address} (SQLite file ${config.server.dbFile})` : `· ${describeRunningServer(config, 'keel demo')}`,
  );
  let client: KeelClient | undefined;
  let worker: Awaited<ReturnType<typeof prepareWorker>> | undefined;
  let running: Promise<void> | undefined;
  try {
    client = await KeelClient.connect(config);
    if ((await client.workersPolling()) > 0) {
      say(`· workers are already polling task queue "${config.taskQueue}"`);
    } else {
      worker = await prepareWorker(config, registry);
      running = worker.worker.run();
      say(`· started a worker on task queue "${config.taskQueue}"`);
    }
    const handle = await client.start(DEMO_AGENT, DEMO_PROMPT);
    say(`· run ${handle.runId} (agent ${DEMO_AGENT})`);
    const done = handle.result();
    await followRun(handle, done, say, {
      onInterrupt: (interrupt) => decide(handle, interrupt, done, say),
      writeRaw: (text) => process.stdout.write(text),
      colour: wantsColour(process.stdout),
    });
    let exitCode = 0;
    try {
      const result = await done;
      say('');
      say(`answer (${result.finishReason}, ${result.turns} turns, ${result.usage.inputTokens ?? 0} input / ${result.usage.outputTokens ?? 0} output tokens):`);
      say(`  ${result.text}`);
    } catch (error) {
      const failure = runErrorOf(error);
      say(`run failed: ${failure.status}: ${failure.message}`);
      exitCode = 1;
    }
    const ui = `http://${config.server.ip}:${config.server.uiPort}/namespaces/${config.temporal.namespace}/workflows/${handle.runId}`;
    say('');
    say(`Inspect the run (every model and tool call is an activity in its history) in the Temporal UI:`);
    say(`  ${ui}`);
    if (server) say('  (the demo stops its server on exit; `npx keel server` serves the same SQLite file, with this run, again)');
    return exitCode;
  } catch (error) {
    if (KeelError.isInstance(error)) {
      say(`demo failed: ${error.status}: ${error.message}`);
      return 1;
    }
    throw error;
  } finally {
    if (worker && running) {
      worker.worker.shutdown();
      await running;
      await worker.close();
    }
    await client?.close();
    await server?.stop();
  }
}
