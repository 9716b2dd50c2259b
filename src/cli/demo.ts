/**
 * `keel demo` (what `npm start` runs): starts a dev server and a worker if none is
 * reachable, runs the demo agent, prints each turn and tool call as it happens, the final
 * answer, and how to inspect the run afterwards. Node side.
 */
import { isAbsolute, relative, resolve } from 'node:path';
import type { KeelConfig } from '../config/schema';
import { KeelError } from '../core/errors';
import type { Hold } from '../core/run';
import { KeelClient, runErrorOf, type RunHandle } from '../client/keel-client';
import { loadRegistry } from '../worker/load-registry';
import { describeRunningServer, ensureServer, prepareWorker } from '../ops/processes';
import { followRun, wantsColour } from './progress';
import { promptLines, type PromptLines } from './prompt-lines';
import { temporalUiUrlOf } from '../ui/addresses';

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
    const waiting = await handle.pendingHolds().then(
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
async function decide(handle: RunHandle, interrupt: Hold, done: Promise<unknown>, { say, ask }: PromptLines): Promise<void> {
  say(
    `  ⏸ ${interrupt.toolName}(${JSON.stringify(interrupt.input ?? {})}) needs approval (${interrupt.message ?? interrupt.kind}); the run waits durably for it`,
  );
  say(`    (from anywhere: npx keel approve ${handle.runId} ${interrupt.id}   or   npx keel deny ${handle.runId} ${interrupt.id})`);
  let approved = true;
  if (process.stdin.isTTY && process.stdout.isTTY) {
    const stop = new AbortController();
    // Withdrawn once the race is over; closed input (Ctrl-D) counts as no. Progress lines print above the question meanwhile.
    const asked = ask(`    approve ${interrupt.toolName}? [y/N] `, stop.signal).then(
      (text) => ({ text }),
      () => (stop.signal.aborted ? undefined : { text: '' }),
    );
    const answer = await Promise.race([asked, decidedOrEnded(handle, interrupt.id, done, stop.signal).then(() => undefined)]);
    stop.abort();
    // The question is closed before anything more prints.
    await asked;
    if (!answer) {
      process.stdout.write('\n');
      say(`    ${interrupt.id} was decided elsewhere (or the run ended); the run goes on`);
      return;
    }
    approved = /^y(es)?$/i.test(answer.text.trim());
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

/** ` --config <file>` when the demo was not run on the working directory's temporal.yaml (a path inside it relative). */
function configFlag(config: KeelConfig): string {
  if (!config.path || resolve(config.path) === resolve('temporal.yaml')) return '';
  const inside = relative(process.cwd(), config.path);
  return ` --config ${inside && !inside.startsWith('..') && !isAbsolute(inside) ? inside : resolve(config.path)}`;
}

/**
 * Where to see the run after the demo: a link to it in the Temporal UI of a server that goes on
 * running; for the server the demo started (and stops as it exits), the command that serves its
 * SQLite file, this run included, again. Never a link to a server that will be gone.
 */
export function closingLines(config: KeelConfig, runId: string, stopsServer: boolean): string[] {
  const inspect = 'every model and tool call is an activity in its history';
  const flag = configFlag(config);
  const ui = temporalUiUrlOf(config);
  if (!stopsServer && ui) {
    return [`Inspect the run (${inspect}) in the Temporal UI:`, `  ${ui}/namespaces/${config.temporal.namespace}/workflows/${runId}`];
  }
  if (!stopsServer) return [`Inspect the run (${inspect}) in your Temporal UI, or with: npx keel status ${runId}${flag}`];
  return [
    `The demo stops the Temporal server it started as it exits. To inspect the run (${inspect}) again, serve its SQLite file (${config.server.dbFile}), this run included, with`,
    `  npx keel server${flag}`,
    `then open run ${runId} in the Temporal UI it names, or: npx keel status ${runId}${flag}`,
  ];
}

/** Runs the demo end to end; resolves to the exit code. */
export async function runDemo(config: KeelConfig): Promise<number> {
  // One writer for every line, so a line printed while the approval question waits goes above it.
  const lines = promptLines(process.stdin, process.stdout);
  const { say } = lines;
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
      worker = await prepareWorker(config, registry, { logLine: say });
      running = worker.worker.run();
      say(`· started a worker on task queue "${config.taskQueue}"`);
    }
    const handle = await client.start(DEMO_AGENT, DEMO_PROMPT);
    say(`· run ${handle.runId} (agent ${DEMO_AGENT})`);
    const done = handle.result();
    await followRun(handle, done, say, {
      onHold: (interrupt) => decide(handle, interrupt, done, lines),
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
    say('');
    for (const line of closingLines(config, handle.runId, Boolean(server))) say(line);
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
