/**
 * keelEvalSuite: one eval suite as a workflow (docs/eval.md). Each case under each variant is a
 * generate run of its own, a child of the suite (so cases run across workers in parallel, and a
 * worker lost mid-suite loses no case: Temporal goes on with it elsewhere), started with the
 * RecordedTools middleware over the case's record and `interruptMode: 'return'` (a hold ends the
 * case instead of waiting). Each finished run is scored here; the report tallies each variant
 * against the threshold. Runs in the workflow: deterministic, no I/O.
 */
import { principalMemo } from '../../core/principal';
import { ApplicationFailure, ChildWorkflowFailure, executeChild, isCancellation, setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import { GENERATE_WORKFLOW } from '../../core/protocol';
import type { RunInputOptions, RunResult } from '../../core/run';
import { describeZodError } from '../../core/schema-errors';
import { featureActivityCaller } from '../../engine/feature-activity';
import { sessionVersioningOptions } from '../../engine/versioning';
import { recordedTools } from './recorded-tools';
import { judgeDoor, score, scorerLabel, toolCalls } from './scorers';
import { EVAL_MEMO_KEY, EvalSuiteInputSchema, type CaseReport, type EvalCase, type EvalSuiteInput, type SuiteReport, type Variant } from './suite';

/** One case under one variant: its run, then its scores. */
async function runCase(suite: EvalSuiteInput, evalCase: EvalCase, variant: Variant, caseNumber: number): Promise<CaseReport> {
  const runId = `${workflowInfo().workflowId}/${caseNumber}-${variant.name}`;
  const base = { case: evalCase.name, variant: variant.name, source: evalCase.source, runId };
  const input: RunInputOptions = {
    agent: variant.agent ?? evalCase.agent,
    messages: evalCase.messages,
    use: [recordedTools({ records: evalCase.records, missing: suite.missing, safe: suite.safe, stubs: suite.stubs })],
    interruptMode: 'return',
    ...(variant.model ? { model: variant.model } : {}),
  };
  let result: RunResult;
  try {
    result = await executeChild<(input: RunInputOptions) => Promise<RunResult>>(GENERATE_WORKFLOW, {
      workflowId: runId,
      args: [input],
      ...(variant.taskQueue ? { taskQueue: variant.taskQueue } : {}),
      ...(evalCase.priority ? { priority: evalCase.priority } : {}),
      staticSummary: `eval ${suite.name}: ${evalCase.name} (${variant.name})`,
      // Marks it as a case's run: a later suite's query never takes it for a recorded run.
      // and belongs to whom the recorded run belonged.
      memo: { [EVAL_MEMO_KEY]: workflowInfo().workflowId, ...principalMemo(evalCase.principal) },
    });
  } catch (error) {
    const cause = error instanceof ChildWorkflowFailure && error.cause ? error.cause.message : (error as Error).message;
    return { ...base, passed: false, error: cause, scores: [], toolCalls: 0 };
  }
  if (result.finishReason === 'interrupted') {
    const held = result.interrupts.flatMap((part) => ('toolRequest' in part ? [part.toolRequest.name] : []));
    return {
      ...base,
      passed: false,
      error: `the run held ${held.join(', ') || 'a call'} for a decision`,
      scores: [],
      toolCalls: toolCalls(result.messages).length,
    };
  }
  const activity = featureActivityCaller();
  const scores = [];
  for (const scorer of evalCase.scorers) {
    try {
      scores.push(await score(scorer, { result, evalCase, judge: (judged) => activity(judgeDoor, judged) }));
    } catch (error) {
      // A scorer that cannot decide (a judge model no worker has, a judge that never answered) fails its case, not the suite.
      if (isCancellation(error)) throw error;
      scores.push({ scorer: scorerLabel(scorer), passed: false, reason: (error as Error).message });
    }
  }
  return { ...base, passed: scores.every((entry) => entry.passed), text: result.text, scores, toolCalls: toolCalls(result.messages).length };
}

/** The suite: every case under every variant, `concurrency` at a time; then the tally. */
export async function keelEvalSuite(raw: EvalSuiteInput): Promise<SuiteReport> {
  const parsed = EvalSuiteInputSchema.safeParse(raw);
  if (!parsed.success)
    throw ApplicationFailure.create({ type: 'INVALID_ARGUMENT', message: `invalid suite: ${describeZodError(parsed.error)}`, nonRetryable: true });
  const suite = parsed.data;
  const jobs = suite.cases.flatMap((evalCase, index) => suite.variants.map((variant) => ({ evalCase, variant, number: index + 1 })));
  const reports: CaseReport[] = [];
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < jobs.length) {
      const index = next++;
      const { evalCase, variant, number } = jobs[index]!;
      reports[index] = await runCase(suite, evalCase, variant, number);
    }
  };
  await Promise.all(Array.from({ length: Math.min(suite.concurrency, jobs.length) }, lane));
  const variants = suite.variants.map(({ name }) => {
    const mine = reports.filter((report) => report.variant === name);
    const passed = mine.filter((report) => report.passed).length;
    const scoreOf = mine.length ? passed / mine.length : 0;
    return { name, passed, total: mine.length, score: scoreOf, ok: scoreOf >= suite.threshold };
  });
  return { name: suite.name, threshold: suite.threshold, cases: reports, variants, ok: variants.every((variant) => variant.ok) };
}
setWorkflowOptions(sessionVersioningOptions, keelEvalSuite);
