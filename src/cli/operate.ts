/**
 * The operations commands: `keel deploy check`, `keel storage gc`, `keel history export` and
 * `keel namespace setup`, each loading its module (src/ops, src/storage) when it runs. Node side.
 */
import { durationMs } from '../core/duration';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KeelConfig } from '../config/schema';
import { DirectoryError, makeDirectory } from '../server/make-directory';
import { EXIT, UsageError, later, numberOption, print, refuse, type CliOptions } from './common';
import { runErrorOf, withClient } from './client';

export async function commandDeploy(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  if (positionals[0] !== 'check' || positionals.length > 1)
    throw new UsageError('keel deploy needs check: keel deploy check [--per-agent <n>] [--agent <name>] [--json]');
  const perAgent = numberOption(options, 'per-agent');
  const { checkDeploy, installCheckRuntime } = later<typeof import('../ops/deploy-check')>('../ops/deploy-check');
  const { describeLimit } = later<typeof import('../ops/fairness-limits')>('../ops/fairness-limits');
  installCheckRuntime();
  return withClient(config, async (client) => {
    const report = await checkDeploy(client.temporal, config, {
      ...(perAgent !== undefined ? { perAgent } : {}),
      ...(options.agent ? { agent: options.agent } : {}),
    });
    if (options.json) print(true, report);
    else {
      const total = Object.values(report.checked).reduce((sum, count) => sum + count, 0);
      const agents =
        Object.entries(report.checked)
          .map(([agent, count]) => `${agent} ${count}`)
          .join(', ') || 'none';
      for (const failure of report.failures) {
        const at = failure.event ? ` at event ${failure.event.id} (${failure.event.type})` : '';
        process.stdout.write(
          `✗ run ${failure.runId} (agent ${failure.agent}, Temporal run ${failure.temporalRunId}) does not replay${at}: ${failure.message.split('\n')[0]}\n`,
        );
      }
      for (const { model, taskQueue, perTenant, was } of report.limitsOff ?? [])
        process.stdout.write(
          `✗ model ${model} (task queue ${taskQueue}): the server's per-tenant limit is ${describeLimit(was)}, the config's ${describeLimit(perTenant)}; run keel namespace setup to write it\n`,
        );
      process.stdout.write(
        `keel deploy check: ${total - report.failures.length} of ${total} runs replay against this build (${agents})${report.failures.length ? `; ${report.failures.length} would fail` : ''}\n`,
      );
    }
    return report.failures.length || report.limitsOff ? EXIT.failed : EXIT.ok;
  });
}

export async function commandStorage(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  if (positionals[0] !== 'gc' || positionals.length > 1)
    throw new UsageError('keel storage needs gc: keel storage gc [--min-age <duration>] [--dry-run] [--json]');
  let minAgeMs: number | undefined;
  if (options['min-age'] !== undefined) {
    minAgeMs = durationMs(options['min-age']);
    if (minAgeMs === undefined || minAgeMs < 0) throw new UsageError(`--min-age: a duration such as "1 hour" or "30m", not "${options['min-age']}"`);
  }
  const { collectGarbage } = later<typeof import('../storage/gc')>('../storage/gc');
  return withClient(config, async (client) => {
    const report = await collectGarbage(client.temporal, config, { ...(minAgeMs !== undefined ? { minAgeMs } : {}), dryRun: options['dry-run'] });
    if (options.json) print(true, report);
    else {
      const verb = options['dry-run'] ? 'would delete' : 'deleted';
      process.stdout.write(
        `keel storage gc: ${verb} ${report.deleted.length} of ${report.stored} stored payloads (${report.freedBytes} bytes); ${report.referenced} referenced by ${report.runs} runs, ${report.young} kept as younger than the minimum age\n`,
      );
    }
    return EXIT.ok;
  });
}

export async function commandHistory(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  const [verb, runId, ...rest] = positionals;
  if (verb !== 'export' || !runId || rest.length) throw new UsageError('keel history needs export and a run id: keel history export <runId> [--out <file>]');
  const { exportHistory, historyFileName, continuedNote } = later<typeof import('../ops/history-export')>('../ops/history-export');
  return withClient(config, async (client) => {
    let exported: Awaited<ReturnType<typeof exportHistory>>;
    try {
      exported = await exportHistory(client, runId);
    } catch (error) {
      return refuse(options, 'history export', runErrorOf(error));
    }
    if (options.out === undefined) {
      process.stdout.write(exported.text);
      if (exported.continuedFrom) process.stderr.write(`keel history export: printed the history of run ${runId}${continuedNote(exported)}\n`);
      return EXIT.ok;
    }
    // A directory (one that exists, or a path ending in /, made when missing) gets <runId>.json, the name replayHistories reads the run id from.
    const toDirectory = /[\\/]$/.test(options.out) || (existsSync(options.out) && statSync(options.out).isDirectory());
    const file = toDirectory ? join(options.out, historyFileName(runId)) : options.out;
    try {
      if (toDirectory) makeDirectory(options.out);
      writeFileSync(file, exported.text);
    } catch (error) {
      const reason = error instanceof DirectoryError ? error.message : ((error as NodeJS.ErrnoException).code ?? (error as Error).message);
      throw new UsageError(`keel history export --out: cannot write ${file}: ${reason}`);
    }
    process.stderr.write(`keel history export: wrote the history of run ${runId}${continuedNote(exported)} to ${file}\n`);
    return EXIT.ok;
  });
}

/** `keel namespace setup`: readies the configured namespace for keel (src/ops/namespace-setup.ts). */
export async function commandNamespace(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  if (positionals[0] !== 'setup' || positionals.length > 1)
    throw new UsageError('keel namespace needs setup: keel namespace setup [--retention <duration>] [--json]');
  return await later<typeof import('../ops/namespace-setup')>('../ops/namespace-setup').runNamespaceSetup(config, {
    ...(options.retention !== undefined ? { retention: options.retention } : {}),
    json: options.json,
  });
}

/** `keel eval <suite>`: the suite's cases against the agents as they are now (docs/eval.md); exit 1 when a variant is below the threshold. */
export async function commandEval(config: KeelConfig, positionals: string[], options: CliOptions): Promise<number> {
  const [suitePath, ...rest] = positionals;
  if (!suitePath || rest.length)
    throw new UsageError('keel eval needs one suite file: keel eval <suite.yaml|suite.ts> [--json] [--junit <file>] [--id <suiteId>]');
  if (!existsSync(suitePath)) throw new UsageError(`keel eval: no suite file ${suitePath}`);
  const { runSuite, reportTable, reportJunit, SuiteError } = later<typeof import('../ops/eval-suite')>('../ops/eval-suite');
  return withClient(config, async (client) => {
    let report;
    try {
      report = await runSuite(client, suitePath, options.id !== undefined ? { suiteId: options.id } : {});
    } catch (error) {
      if (error instanceof SuiteError) throw new UsageError(`keel eval: ${error.message}`);
      return refuse(options, 'eval', runErrorOf(error));
    }
    if (options.junit !== undefined) writeFileSync(options.junit, reportJunit(report));
    print(options.json, report, reportTable(report));
    return report.ok ? EXIT.ok : EXIT.failed;
  });
}
