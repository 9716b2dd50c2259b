/**
 * keel eval (docs/eval.md), with real `keel worker` processes and the `triage` fixture, whose
 * tools leave a line in orders.log per call. Two runs are recorded live and exported with `keel
 * history export`; a suite of those files, a run found on the server by query, and a case
 * written by hand passes on the unchanged agent without running a tool; after a prompt change
 * (the worker restarted with another system prompt) it fails, naming the case; a scripted judge
 * scores a rubric; two variants are reported side by side; a worker killed mid-suite loses no case.
 */
import { PRINCIPAL_MEMO_KEY } from '../src/core/principal';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { KeelClient } from '../src/client/keel-client';
import { loadConfig } from '../src/config/load';
import { runSuite } from '../src/ops/eval-suite';
import { ROOT, killAfterEach, runKeel, spawnKeel, writeTestConfig, type KeelProcess } from './support/processes';

const track = killAfterEach(afterEach);
const { dir, configPath } = writeTestConfig('eval', { modules: [join(ROOT, 'test', 'fixtures', 'eval-agents.ts')] });
let client: KeelClient;

const startWorker = async (env: Record<string, string> = {}): Promise<KeelProcess> => {
  const worker = track(spawnKeel(['worker', '--config', configPath], { env: { KEEL_TEST_DIR: dir, ...env } }));
  await worker.waitFor(/keel: worker \d+ on task queue/);
  return worker;
};
const stopWorker = async (worker: KeelProcess, signal: NodeJS.Signals = 'SIGTERM') => {
  worker.kill(signal);
  await worker.exited;
};
const sideEffects = () => (existsSync(join(dir, 'orders.log')) ? readFileSync(join(dir, 'orders.log'), 'utf8').trim().split('\n').length : 0);
const writeSuite = (name: string, suite: unknown) => {
  const path = join(dir, name);
  writeFileSync(path, stringify(suite));
  return path;
};

let where: string;
let refundId: string;
beforeAll(async () => {
  client = await KeelClient.connect(loadConfig({ path: configPath }));
  const worker = await startWorker();
  const [whereRun, refundRun] = await Promise.all([
    client.start('triage', 'where is order 7?', { tenant: 'acme', owner: 'alice' }),
    client.start('triage', 'please refund order 9'),
  ]);
  expect((await whereRun.result()).text).toBe('order 7 is shipped');
  expect((await refundRun.result()).text).toBe('refunded order 9');
  where = whereRun.runId;
  refundId = refundRun.runId;
  mkdirSync(join(dir, 'cases'));
  for (const [name, runId] of [
    ['where', whereRun.runId],
    ['refund', refundRun.runId],
  ]) {
    const exported = await runKeel(['history', 'export', runId!, '--out', join(dir, 'cases', `${name}.json`), '--config', configPath]);
    expect(exported.code).toBe(0);
  }
  await stopWorker(worker);
}, 120_000);

/** A case written by hand, its tool answered by the record. */
const byHand = {
  name: 'by hand',
  prompt: 'where is order 3?',
  agent: 'triage',
  tools: [{ name: 'lookup_order', input: { id: 3 }, output: { id: 3, status: 'lost' } }],
  scorers: [{ contains: 'order 3 is lost' }],
};

describe('keel eval', () => {
  const suite = () => ({
    name: 'triage',
    scorers: [{ sameAsRecorded: true }],
    cases: [
      { name: 'where', history: 'cases/where.json', scorers: [{ tool: 'lookup_order', input: { id: 7 } }] },
      {
        name: 'refund',
        history: 'cases/refund.json',
        scorers: [{ tool: 'refund_order' }, { judge: { model: 'scripted/judge', rubric: 'The answer names the order.' } }],
      },
      { name: 'from the server', query: `WorkflowId = '${where}'`, scorers: [{ contains: 'order 7' }] },
    ],
  });

  it('passes a suite of recorded runs on the unchanged agent, runs no tool, and writes JUnit', async () => {
    const worker = await startWorker();
    const before = sideEffects();
    const path = writeSuite('suite.yaml', {
      ...suite(),
      cases: [...suite().cases, byHand],
    });
    const junit = join(dir, 'report.xml');
    const ran = await runKeel(['eval', path, '--json', '--junit', junit, '--config', configPath]);
    const report = JSON.parse(ran.stdout) as {
      ok: boolean;
      cases: Array<{ case: string; runId: string; passed: boolean; scores: Array<{ scorer: string; passed: boolean; reason: string }>; error?: string }>;
    };
    // A case of alice's recorded run (by its history file or by a query) belongs to her too (docs/tenants.md); one of an unowned run to no one.
    for (const name of ['where', `from the server ${where}`, 'refund']) {
      const caseRun = report.cases.find((entry) => entry.case === name)!.runId;
      const described = await client.getHandle(caseRun).describe();
      expect(described.memo?.[PRINCIPAL_MEMO_KEY], name).toEqual(name === 'refund' ? undefined : { tenant: 'acme', owner: 'alice' });
      // Each case goes at the eval priority, last; a case of acme's run within acme's fair share (docs/tenants.md, "Fair shares").
      expect(described.priority?.priorityKey, name).toBe(5);
      expect(described.priority?.fairnessKey || undefined, name).toBe(name === 'refund' ? undefined : 'acme');
    }
    const handWritten = report.cases.find((entry) => entry.case === 'by hand')!;
    // The case by hand has no recorded answer: sameAsRecorded fails it, saying so.
    expect(handWritten.scores).toContainEqual({ scorer: 'sameAsRecorded', passed: false, reason: 'the case has no recorded answer' });
    expect(report.cases.filter((entry) => entry.case !== 'by hand').map((entry) => [entry.case, entry.passed])).toEqual([
      ['where', true],
      ['refund', true],
      [`from the server ${where}`, true],
    ]);
    expect(report.cases.find((entry) => entry.case === 'refund')!.scores).toContainEqual({
      scorer: 'judge scripted/judge',
      passed: true,
      reason: 'it names the order',
    });
    expect(ran.code).toBe(1);
    expect(readFileSync(junit, 'utf8')).toMatch(/<testsuite name="triage \(current\)" tests="4" failures="1"/);
    expect(readFileSync(junit, 'utf8')).toContain('sameAsRecorded: the case has no recorded answer');
    // Tools answered from the record: nothing ran.
    expect(sideEffects()).toBe(before);

    // Without the scorer that cannot hold for a case by hand, the suite passes: exit 0, a table.
    const passing = writeSuite('passing.yaml', {
      ...suite(),
      scorers: [],
      cases: [...suite().cases, byHand],
    });
    const table = await runKeel(['eval', passing, '--config', configPath]);
    expect(table.stderr).toBe('');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^case\s+current\n/);
    expect(table.stdout).toContain('current: 4/4 passed (100%, threshold 100%) ok');
    expect(sideEffects()).toBe(before);
    await stopWorker(worker);
  });

  it('fails on a prompt change that breaks one case, naming it', async () => {
    const worker = await startWorker({ TRIAGE_PROMPT: 'Be kind, and never refund.' });
    const ran = await runKeel(['eval', writeSuite('suite-2.yaml', suite()), '--config', configPath]);
    expect(ran.code).toBe(1);
    const rows = ran.stdout.split('\n');
    expect(rows.find((row) => row.startsWith('refund '))).toMatch(/FAIL (sameAsRecorded: the answer is "I cannot refund orders"|tool "refund_order")/);
    expect(rows.find((row) => row.startsWith('where '))).toMatch(/PASS$/);
    expect(ran.stdout).toContain('current: 2/3 passed (67%, threshold 100%) BELOW THRESHOLD');
    await stopWorker(worker);
  });

  it('reports two variants side by side, and follows the policy for a call the record lacks', async () => {
    const worker = await startWorker();
    const before = sideEffects();
    const variants = await runSuite(
      client,
      writeSuite('variants.yaml', { ...suite(), threshold: 0.5, variants: [{ name: 'current' }, { name: 'terse', model: 'scripted/triage-terse' }] }),
    );
    expect(variants.variants.map((variant) => [variant.name, variant.passed, variant.total, variant.ok])).toEqual([
      ['current', 3, 3, true],
      ['terse', 0, 3, false],
    ]);
    expect(variants.ok).toBe(false);
    // A later suite's query never takes a case's run for a recorded one: only the two runs recorded live are listed.
    const queried = await runSuite(
      client,
      writeSuite('by-agent.yaml', { scorers: [{ sameAsRecorded: true }], cases: [{ name: 'triage', query: "KeelAgent = 'triage'" }] }),
    );
    expect(queried.cases.map((entry) => entry.source).sort()).toEqual([where, refundId].sort());

    // A judge no worker has fails its case, saying why; the suite goes on and reports.
    const unknownJudge = await runSuite(
      client,
      writeSuite('judge.yaml', { agent: 'triage', cases: [{ ...byHand, scorers: [{ judge: { model: 'scripted/nobody', rubric: 'anything' } }] }] }),
    );
    expect(unknownJudge.cases[0]).toMatchObject({ passed: false, scores: [{ scorer: 'judge scripted/nobody', passed: false }] });
    expect(unknownJudge.cases[0]!.scores[0]!.reason).toMatch(/judge model "scripted\/nobody" is not registered on this worker/);
    const lacking = { agent: 'triage', scorers: [{ contains: 'order 5' }], cases: [{ name: 'unrecorded', prompt: 'where is order 5?' }] };
    const failed = await runSuite(client, writeSuite('fail.yaml', lacking));
    expect(failed.cases[0]!.error).toBe('tool "lookup_order" was called with {"id":5}, which the recorded run lacks (missing: fail)');
    const stubbed = await runSuite(client, writeSuite('stub.yaml', { ...lacking, missing: 'stub', stubs: { lookup_order: { id: 5, status: 'stubbed' } } }));
    expect(stubbed.cases[0]).toMatchObject({ passed: true, text: 'order 5 is stubbed' });
    const notSafe = await runSuite(client, writeSuite('not-safe.yaml', { ...lacking, missing: 'real' }));
    expect(notSafe.cases[0]!.error).toMatch(/and the suite does not mark "lookup_order" safe to call for real$/);
    expect(sideEffects()).toBe(before);
    const real = await runSuite(client, writeSuite('real.yaml', { ...lacking, missing: 'real', safe: ['lookup_order'] }));
    expect(real.cases[0]).toMatchObject({ passed: true, text: 'order 5 is shipped' });
    expect(sideEffects()).toBe(before + 1);
    await stopWorker(worker);
  });

  it('loses no case when a worker is killed mid-suite', async () => {
    const first = await startWorker({ TRIAGE_DELAY_MS: '1500' });
    const cases = Array.from({ length: 6 }, (_, index) => ({
      name: `case ${index + 1}`,
      prompt: `where is order ${index + 1}?`,
      tools: [{ name: 'lookup_order', input: { id: index + 1 }, output: { id: index + 1, status: 'shipped' } }],
    }));
    const path = writeSuite('crash.yaml', { agent: 'triage', concurrency: 6, scorers: [{ matches: '^order \\d is shipped$' }], cases });
    const suiteId = `eval-crash-${Date.now()}`;
    const report = runSuite(client, path, { suiteId });
    // Once the case runs are under way, the worker dies; another takes over.
    await expect
      .poll(
        async () => {
          let count = 0;
          for await (const _ of client.temporal.workflow.list({ query: `WorkflowId STARTS_WITH '${suiteId}/'` })) count++;
          return count;
        },
        { timeout: 20_000 },
      )
      .toBe(6);
    await stopWorker(first, 'SIGKILL');
    await startWorker({ TRIAGE_DELAY_MS: '200' });
    // Started again with the same id (a CI job restarted), it waits for the same suite.
    const again = await runSuite(client, path, { suiteId });
    const done = await report;
    expect(again).toEqual(done);
    expect(done.cases.map((entry) => [entry.case, entry.passed])).toEqual(cases.map((entry) => [entry.name, true]));
    expect(done.ok).toBe(true);
  });

  it('runs examples/eval/fare-scout.yaml against the demo agents, as docs/eval.md shows', async () => {
    const demo = writeTestConfig('eval-example', { modules: [join(ROOT, 'examples', 'agents.ts')] });
    const worker = track(spawnKeel(['worker', '--config', demo.configPath], { env: { KEEL_TEST_DIR: demo.dir } }));
    await worker.waitFor(/keel: worker \d+ on task queue/);
    const ran = await runKeel(['eval', join(ROOT, 'examples', 'eval', 'fare-scout.yaml'), '--config', demo.configPath]);
    expect(ran.stderr).toBe('');
    expect(ran.stdout).toMatch(/^euros to dollars\s+PASS$/m);
    expect(ran.code).toBe(0);
  });

  it('refuses a bad suite in one line, exit 2, running nothing', async () => {
    const unknownField = await runKeel(['eval', writeSuite('bad.yaml', { ...suite(), extra: 1 }), '--config', configPath]);
    expect(unknownField.code).toBe(2);
    expect(unknownField.stderr.trim().split('\n')).toHaveLength(1);
    expect(unknownField.stderr).toMatch(/bad\.yaml: .*extra/);
    const badRegex = await runKeel([
      'eval',
      writeSuite('regex.yaml', { agent: 'triage', cases: [{ prompt: 'hi', scorers: [{ matches: '(' }] }] }),
      '--config',
      configPath,
    ]);
    expect(badRegex.code).toBe(2);
    expect(badRegex.stderr).toMatch(/regex\.yaml: cases\[0\]\.scorers\[0\]\.matches: not a regular expression JavaScript reads/);
    const noScorers = await runKeel(['eval', writeSuite('none.yaml', { agent: 'triage', cases: [{ prompt: 'hi' }] }), '--config', configPath]);
    expect(noScorers.code).toBe(2);
    expect(noScorers.stderr).toMatch(/case "hi" has no scorers/);
    const missing = await runKeel(['eval', join(dir, 'nope.yaml'), '--config', configPath]);
    expect(missing.code).toBe(2);
  });
});
