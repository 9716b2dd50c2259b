/**
 * Records the histories of test/histories/scenarios.ts into test/histories/*.json, on a
 * dev server of its own. Existing histories are kept (they prove that runs recorded by
 * older code still replay); `--force` re-records them all.
 * Run: npm run record-histories [-- --force]
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Decision } from '../src/core/holds';
import { vouched } from '../src/security/identity';
import { loadSigningKeys } from '../src/security/signing-keys';
import { join } from 'node:path';
import { KeelClient } from '../src/client/keel-client';
import { defineConfig } from '../src/config/load';
import { historyToJSON } from '../src/node/history-json';
import { findTemporalBinary, startDevServer } from '../src/server/dev-server';
import { connectClient, connectWorker } from '../src/worker/connect';
import { createKeelWorker } from '../src/worker/create-worker';
import { loadRegistry } from '../src/worker/load-registry';
import { SCENARIO_MIDDLEWARE_MODULES, SCENARIOS, scenarioRegistry } from '../test/histories/scenarios';
import { answerHolds } from '../test/support/answer-holds';
import { freePort } from '../test/support/free-port';
import { resetToFirstTask } from '../test/support/history';
import type { RunResult } from '../src/core/run';
import { spendLedgerId } from '../src/features/budget/spend-door';
import { EVAL_SUITE_WORKFLOW, type EvalSuiteInput, type SuiteReport } from '../src/features/catalog';

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const server = await startDevServer({ binary: findTemporalBinary(defineConfig({})), port: await freePort(), headless: true });
  const middlewareModules = SCENARIO_MIDDLEWARE_MODULES;
  // A webhook for the runs' hold notices (docs/notify.md): it takes every one.
  const receiver = createServer((request, response) => request.resume().on('end', () => response.writeHead(204).end()));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  process.env.KEEL_RECORD_HOOK_SECRET ??= 'record-histories-hook-secret';
  const config = defineConfig({
    temporal: { address: server.address },
    taskQueue: 'record-histories',
    middlewareModules,
    notify: [{ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`, secret: 'KEEL_RECORD_HOOK_SECRET' }],
  });
  const connection = await connectWorker(config);
  const temporal = await connectClient(config);
  const registry = await loadRegistry({ modules: [], models: [], agents: [], baseDir: config.baseDir, middlewareModules }, scenarioRegistry());
  const worker = await createKeelWorker({ config, registry, connection, client: temporal });
  const running = worker.run();
  const client = new KeelClient({ temporal, taskQueue: config.taskQueue });
  try {
    const force = process.argv.includes('--force');
    for (const scenario of SCENARIOS) {
      const file = join(__dirname, '..', 'test', 'histories', `${scenario.name}.json`);
      if (existsSync(file) && !force) {
        console.log(`${scenario.name}: kept ${file}`);
        continue;
      }
      if (scenario.sessionMessages) {
        const session = client.session(scenario.agent, `replay-${scenario.name}`);
        for (const [index, message] of scenario.sessionMessages.entries()) {
          const detached = index === scenario.sessionMessages.length - 1;
          const sent = await session.send(message, { detach: detached });
          if (detached) await session.waitForSnapshot(sent.snapshotId);
        }
        const history = await temporal.workflow.getHandle(session.workflowId).fetchHistory();
        writeFileSync(file, `${historyToJSON(history)}\n`);
        console.log(`${scenario.name}: ${scenario.sessionMessages.length} runs (${history.events?.length} events) -> ${file}`);
        continue;
      }
      if (scenario.evalCase) {
        const input: EvalSuiteInput = {
          name: scenario.name,
          threshold: 1,
          missing: 'fail',
          safe: [],
          stubs: {},
          concurrency: 2,
          variants: [{ name: 'current' }, { name: 'judge-model', model: 'scripted/replay-judge' }],
          cases: [
            {
              name: scenario.prompt,
              agent: scenario.agent,
              messages: [{ role: 'user', content: [{ text: scenario.prompt }] }],
              records: scenario.evalCase.records,
              scorers: scenario.evalCase.scorers as EvalSuiteInput['cases'][number]['scorers'],
              source: 'by hand',
            },
          ],
        };
        const suite = await temporal.workflow.start(EVAL_SUITE_WORKFLOW, { taskQueue: config.taskQueue, workflowId: `replay-${scenario.name}`, args: [input] });
        const report = (await suite.result()) as SuiteReport;
        const history = await suite.fetchHistory();
        writeFileSync(file, `${historyToJSON(history)}\n`);
        console.log(
          `${scenario.name}: ${report.variants.map((variant) => `${variant.name} ${variant.passed}/${variant.total}`).join(', ')} (${history.events?.length} events) -> ${file}`,
        );
        continue;
      }
      let handle;
      if (scenario.forkAt) {
        const source = await client.start(scenario.agent, scenario.prompt, { runId: `replay-${scenario.name}-source` });
        await source.result();
        ({ handle } = await source.fork({ at: scenario.forkAt.turn, ...scenario.forkAt, runId: `replay-${scenario.name}` }));
      } else if (scenario.resumeApproved) {
        const first = await client.run(scenario.agent, scenario.prompt, {
          runId: `replay-${scenario.name}-first`,
          maxTurns: scenario.maxTurns,
          interruptMode: 'return',
        });
        const restart = first.interrupts.map((part) => ({
          ...(part as { toolRequest: { name: string; ref?: string; input: unknown } }),
          metadata: { resumed: { approved: true } },
        }));
        handle = await client.start(scenario.agent, first.messages, { runId: `replay-${scenario.name}`, maxTurns: scenario.maxTurns, resume: { restart } });
      } else {
        handle = await client.start(scenario.agent, scenario.prompt, {
          runId: `replay-${scenario.name}`,
          maxTurns: scenario.maxTurns,
          ...(scenario.interruptMode ? { interruptMode: scenario.interruptMode } : {}),
          ...(scenario.tenant ? { tenant: scenario.tenant } : {}),
          ...(scenario.continueAsNewAt ? { continueAsNewAt: { historyEvents: scenario.continueAsNewAt, historyBytes: 50 * 1024 * 1024 } } : {}),
        });
      }
      if (scenario.cancelAtTurn !== undefined) {
        while ((await handle.status()).turn < scenario.cancelAtTurn) await new Promise((resolve) => setTimeout(resolve, 100));
        await new Promise((resolve) => setTimeout(resolve, 500));
        await handle.cancel();
      }
      if (scenario.steers) {
        while ((await handle.status()).turn < 1) await new Promise((resolve) => setTimeout(resolve, 100));
        for (const { afterMs, text, interrupt } of scenario.steers) {
          await new Promise((resolve) => setTimeout(resolve, afterMs));
          await handle.steer(text, { interrupt, steerId: `${scenario.name}-${text}` });
        }
      }
      if (scenario.decisions) {
        // Made by a verified identity: each decision carries the proof keel serve would sign (the workers' key is the recorder's).
        const vouchedBy = scenario.vouchedBy;
        const decisions = vouchedBy
          ? scenario.decisions.map((decision, index) =>
              vouched(loadSigningKeys(config), Array.isArray(vouchedBy) ? vouchedBy[index]! : vouchedBy, handle.runId, decision as Decision),
            )
          : scenario.decisions;
        await answerHolds(
          handle,
          handle.result().catch(() => undefined),
          decisions,
        );
      }
      let outcome = await handle.result().then(
        (result) => `completed: ${result.text}`,
        (error: Error) => `ended: ${error.message}`,
      );
      let runId: string | undefined;
      if (scenario.resetToStart) {
        runId = await resetToFirstTask(temporal, config.temporal.namespace, handle.runId);
        outcome = `reset, then ${await temporal.workflow
          .getHandle(handle.runId, runId)
          .result()
          .then((result: RunResult) => `completed: ${result.text}`)}`;
      }
      if (scenario.continueAsNewAt) {
        // The chain's second run: walked back from its last, each run's first event names the run it continued.
        const before = async (id: string) =>
          (await temporal.workflow.getHandle(handle.runId, id).fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ||
          undefined;
        runId = (await temporal.workflow.getHandle(handle.runId).describe()).runId;
        let previous = await before(runId);
        if (!previous) throw new Error(`${scenario.name}: the run did not continue as new`);
        for (let first = await before(previous); first; first = await before(previous)) [runId, previous] = [previous, first];
      }
      const recorded = scenario.ledger && scenario.tenant ? temporal.workflow.getHandle(spendLedgerId('tenant', scenario.tenant)) : undefined;
      const history = await (recorded ?? temporal.workflow.getHandle(handle.runId, runId)).fetchHistory();
      writeFileSync(file, `${historyToJSON(history)}\n`);
      console.log(`${scenario.name}: ${outcome} (${history.events?.length} events) -> ${file}`);
    }
  } finally {
    // A worker that stopped on its own has already said why (its run() rejected).
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running;
    await connection.close();
    await temporal.connection.close();
    await server.stop();
    receiver.close();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
