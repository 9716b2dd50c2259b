/**
 * `keel eval <suite>` (docs/eval.md), the Node half: reads a suite (YAML, or a TypeScript
 * module's default export), turns its cases into what the suite workflow runs (a recorded run's
 * prompt, tool answers and answer, from a `keel history export` file or from runs on the server),
 * runs the suite as a workflow, and reports: a table, JSON, JUnit XML. Node side.
 */
import { priorityOf } from '../core/fairness';
import { PRINCIPAL_MEMO_KEY, principalField, principalOfMemo, type Principal } from '../core/principal';
import { readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import junit from 'junit-report-builder';
import { parse as parseYaml } from 'yaml';
import type { KeelClient } from '../client/keel-client';
import { decodePayload } from '../client/decode-payload';
import { KeelError } from '../core/errors';
import { FORK_MEMO_KEY, ForkOriginSchema, conversationCalls, conversationTurns } from '../core/fork';
import { GENERATE_WORKFLOW } from '../core/protocol';
import { RunResultSchema, type RunResult } from '../core/run';
import { describeZodError } from '../core/schema-errors';
import { historyFromJSON } from '../node/history-json';
import { requireModule } from '../node/require-ts';
import { runErrorOf } from '../node/run-errors';
import {
  EVAL_MEMO_KEY,
  EVAL_SUITE_WORKFLOW,
  SuiteFileSchema,
  type EvalCase,
  type EvalSuiteInput,
  type SuiteFile,
  type SuiteReport,
  type ToolRecord,
} from '../features/catalog';

/** A suite file that cannot be used: said in one line, naming the file and what is wrong. */
export class SuiteError extends Error {}

/** Reads and checks a suite file. */
export function loadSuite(path: string): SuiteFile {
  let raw: unknown;
  try {
    if (/\.[cm]?[jt]s$/.test(path)) {
      const module = requireModule<{ default?: unknown; suite?: unknown }>(resolve(path), __filename);
      raw = module.default ?? module.suite;
    } else raw = parseYaml(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new SuiteError(`${path}: ${(error as Error).message.split('\n')[0]}`);
  }
  const parsed = SuiteFileSchema.safeParse(raw);
  if (!parsed.success) throw new SuiteError(`${path}: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

/** A recorded run's case parts: its prompt (the conversation before the first model reply), its tool calls with their results, its answer. */
export function recordedCase(result: RunResult, forkTurn = 0): Pick<EvalCase, 'messages' | 'records' | 'recordedText'> {
  // The run's own first reply: after the turns its conversation began with (a session's history, a fork's source).
  const before = Math.max(0, conversationTurns(result.messages) - result.turns + forkTurn);
  let seen = 0;
  const firstReply = result.messages.findIndex((message) => message.role === 'model' && ++seen === before + 1);
  const messages = (firstReply === -1 ? result.messages : result.messages.slice(0, firstReply)).filter((message) => message.role !== 'system');
  const records: ToolRecord[] = [...conversationCalls(result.messages).values()].flatMap((call) =>
    call.result ? [{ name: call.toolName, input: call.input, output: call.result.output }] : [],
  );
  return { messages, records, recordedText: result.text };
}

/** A `keel history export` file's run: its agent and result (a run that did not complete is refused). */
async function historyRun(client: KeelClient, file: string): Promise<{ agent: string; result: RunResult; forkTurn: number; principal: Principal }> {
  let events;
  try {
    events = historyFromJSON(JSON.parse(readFileSync(file, 'utf8'))).events ?? [];
  } catch (error) {
    throw new SuiteError(`${file}: not a history keel history export wrote (${(error as Error).message.split('\n')[0]})`);
  }
  const started = events[0]?.workflowExecutionStartedEventAttributes;
  if (started?.workflowType?.name !== GENERATE_WORKFLOW)
    throw new SuiteError(`${file}: not the history of a keel run (its workflow is ${started?.workflowType?.name ?? 'unknown'})`);
  const completed = events.at(-1)?.workflowExecutionCompletedEventAttributes;
  if (!completed) throw new SuiteError(`${file}: the run did not complete; a case needs a completed run`);
  const input = await decodePayload<{ agent?: string }>(client.temporal, started.input?.payloads?.[0]);
  const fork = ForkOriginSchema.safeParse(await decodePayload(client.temporal, started.memo?.fields?.[FORK_MEMO_KEY]));
  const principal = principalOfMemo({ [PRINCIPAL_MEMO_KEY]: await decodePayload(client.temporal, started.memo?.fields?.[PRINCIPAL_MEMO_KEY]) });
  const result = RunResultSchema.safeParse(await decodePayload(client.temporal, completed.result?.payloads?.[0]));
  if (!result.success || !input?.agent)
    throw new SuiteError(`${file}: its input or result cannot be read with this config (a key or a payload store it lacks)`);
  return { agent: input.agent, result: result.data, forkTurn: fork.success ? fork.data.turn : 0, principal };
}

/** The completed runs a query lists (newest first, at most `limit`), with their agents. */
async function queriedRuns(
  client: KeelClient,
  query: string,
  limit: number,
): Promise<Array<{ runId: string; agent?: string; result: RunResult; forkTurn: number; principal: Principal }>> {
  const listed = new Map<string, { agent?: string; forkTurn: number; principal: Principal }>();
  for await (const run of client.temporal.workflow.list({ query: `WorkflowType = '${GENERATE_WORKFLOW}' AND ExecutionStatus = 'Completed' AND (${query})` })) {
    // A run an eval suite made (a case's) is not a recorded run; an id listed again is a chain's earlier execution. The
    // suite's query is the user's text: what it lists is checked here too (a completed keel run).
    if (run.type !== GENERATE_WORKFLOW || run.status.name !== 'COMPLETED' || run.memo?.[EVAL_MEMO_KEY] !== undefined || listed.has(run.workflowId)) continue;
    const fork = ForkOriginSchema.safeParse(run.memo?.[FORK_MEMO_KEY]);
    listed.set(run.workflowId, {
      ...(typeof run.memo?.agent === 'string' ? { agent: run.memo.agent } : {}),
      forkTurn: fork.success ? fork.data.turn : 0,
      principal: principalOfMemo(run.memo),
    });
    if (listed.size >= limit) break;
  }
  // Their results, read at once (each may be a stored payload).
  const runs = await Promise.all(
    [...listed].map(async ([runId, run]) => {
      const result = RunResultSchema.safeParse(await client.temporal.workflow.getHandle(runId).result());
      return result.success ? [{ runId, ...run, result: result.data }] : [];
    }),
  );
  return runs.flat();
}

/** The suite's cases as the workflow runs them: each recorded run read, each hand-written case checked. */
export async function resolveCases(client: KeelClient, suite: SuiteFile, suitePath: string): Promise<EvalCase[]> {
  const base = dirname(resolve(suitePath));
  const cases: EvalCase[] = [];
  const add = (entry: Omit<EvalCase, 'scorers'>, own: EvalCase['scorers']) => {
    const scorers = [...suite.scorers, ...own];
    if (scorers.length === 0) throw new SuiteError(`${suitePath}: case "${entry.name}" has no scorers (give the suite or the case some)`);
    // A case of a tenant's run shares that tenant's fair share; every case goes at the eval priority (the suite's).
    const tenant = entry.principal?.tenant;
    cases.push({ ...entry, scorers, ...(tenant !== undefined ? { priority: priorityOf(client.fairness, 'eval', tenant) } : {}) });
  };
  for (const [index, entry] of suite.cases.entries()) {
    const where = `cases[${index}]`;
    if (entry.history !== undefined) {
      const file = resolve(base, entry.history);
      const { agent, result, forkTurn, principal } = await historyRun(client, file);
      add(
        {
          name: entry.name ?? basename(file, '.json'),
          agent: suite.agent ?? agent,
          source: entry.history,
          ...recordedCase(result, forkTurn),
          ...principalField(principal),
        },
        entry.scorers,
      );
    } else if (entry.query !== undefined) {
      const runs = await queriedRuns(client, entry.query, entry.limit ?? 100);
      if (runs.length === 0) throw new SuiteError(`${suitePath}: ${where}: the query lists no completed keel run: ${entry.query}`);
      for (const run of runs) {
        const agent = suite.agent ?? run.agent;
        if (!agent) throw new SuiteError(`${suitePath}: ${where}: run ${run.runId} does not say its agent; give the suite an agent`);
        add(
          {
            name: `${entry.name ?? 'run'} ${run.runId}`,
            agent,
            source: run.runId,
            ...recordedCase(run.result, run.forkTurn),
            ...principalField(run.principal),
          },
          entry.scorers,
        );
      }
    } else {
      const agent = entry.agent ?? suite.agent;
      if (!agent) throw new SuiteError(`${suitePath}: ${where}: a case written by hand needs an agent (its own, or the suite's)`);
      add(
        {
          name: entry.name ?? entry.prompt!,
          agent,
          source: 'by hand',
          messages: [{ role: 'user', content: [{ text: entry.prompt! }] }],
          records: entry.tools ?? [],
        },
        entry.scorers,
      );
    }
  }
  const names = new Set<string>();
  for (const evalCase of cases) {
    if (names.has(evalCase.name)) throw new SuiteError(`${suitePath}: two cases are named "${evalCase.name}"; name them apart`);
    names.add(evalCase.name);
  }
  return cases;
}

/** Options of `runSuite`. */
export interface RunSuiteOptions {
  /** The suite workflow's id (default `eval-<uuid>`): started again with the same id, it is the same suite. */
  suiteId?: string;
  taskQueue?: string;
}

/** Runs a suite as a workflow and waits for its report. */
export async function runSuite(
  client: KeelClient,
  suitePath: string,
  { suiteId = `eval-${randomUUID()}`, taskQueue }: RunSuiteOptions = {},
): Promise<SuiteReport> {
  const suite = loadSuite(suitePath);
  const cases = await resolveCases(client, suite, suitePath);
  const input: EvalSuiteInput = {
    name: suite.name ?? basename(suitePath).replace(/\.[^.]+$/, ''),
    threshold: suite.threshold,
    missing: suite.missing,
    safe: suite.safe,
    stubs: suite.stubs,
    concurrency: suite.concurrency,
    variants: suite.variants,
    cases,
  };
  try {
    // The same id while the suite runs: this waits for that suite (a CI job restarted mid-suite).
    const handle = await client.temporal.workflow.start<(input: EvalSuiteInput) => Promise<SuiteReport>>(EVAL_SUITE_WORKFLOW, {
      taskQueue: taskQueue ?? client.taskQueue,
      workflowId: suiteId,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      priority: priorityOf(client.fairness, 'eval', undefined),
    });
    return await handle.result();
  } catch (error) {
    const failure = runErrorOf(error);
    throw new KeelError(failure.status, `eval suite ${suiteId}: ${failure.message}`);
  }
}

/** The report as a table: a row per case, a column per variant (PASS, or FAIL and the first reason), then each variant's tally. */
export function reportTable(report: SuiteReport): string {
  const variants = report.variants.map((variant) => variant.name);
  const cell = (name: string, variant: string) => {
    const found = report.cases.find((entry) => entry.case === name && entry.variant === variant);
    if (!found) return '';
    if (found.passed) return 'PASS';
    const failed = found.scores.find((entry) => !entry.passed);
    return `FAIL ${found.error ?? `${failed?.scorer}: ${failed?.reason}`}`;
  };
  const names = [...new Set(report.cases.map((entry) => entry.case))];
  const rows = [['case', ...variants], ...names.map((name) => [name, ...variants.map((variant) => cell(name, variant))])];
  const widths = rows[0]!.map((_, column) => Math.min(60, Math.max(...rows.map((row) => row[column]!.length))));
  const line = (row: string[]) =>
    row
      .map((text, column) => (text.length > widths[column]! ? `${text.slice(0, widths[column]! - 1)}…` : text.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd();
  const tally = report.variants.map(
    (variant) =>
      `${variant.name}: ${variant.passed}/${variant.total} passed (${(variant.score * 100).toFixed(0)}%, threshold ${(report.threshold * 100).toFixed(0)}%) ${variant.ok ? 'ok' : 'BELOW THRESHOLD'}`,
  );
  return [line(rows[0]!), ...rows.slice(1).map(line), '', ...tally].join('\n');
}

/** The report as JUnit XML: a test suite per variant, a test case per case (its failure: every failing scorer, or the run's error). */
export function reportJunit(report: SuiteReport): string {
  const builder = junit.newBuilder();
  for (const variant of report.variants) {
    const suite = builder.testSuite().name(`${report.name} (${variant.name})`);
    for (const entry of report.cases.filter((each) => each.variant === variant.name)) {
      const testCase = suite.testCase().className(`${report.name}.${variant.name}`).name(entry.case);
      if (entry.text !== undefined) testCase.standardOutput(entry.text);
      if (!entry.passed) {
        const reasons =
          entry.error ??
          entry.scores
            .filter((each) => !each.passed)
            .map((each) => `${each.scorer}: ${each.reason}`)
            .join('; ');
        testCase.failure(reasons);
      }
    }
  }
  return builder.build();
}
