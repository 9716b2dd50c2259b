/**
 * Representative runs whose histories are recorded in this folder and replayed by
 * test/replay.test.ts. Re-record with `npx tsx scripts/record-histories.ts` only when a
 * change is meant to be incompatible with runs under way (and say so in the commit).
 */
import { join } from 'node:path';
import { z } from 'zod';
import { defineAgent, defineTool } from '../../src/define';
import { errorReply, objectReply, scriptedModel, textReply, toolCallReply } from '../../src/models/scripted';
import { Registry } from '../../src/registry';
import { fallback } from '../../src/features/fallback/fallback';
import { retry } from '../../src/features/retry/retry';
import { softToolErrors } from '../../src/features/soft-tool-errors/soft-tool-errors';
import { agents } from '../../src/features/agents/agents';
import { artifacts } from '../../src/features/artifacts/artifacts';
import { budget } from '../../src/features/budget/budget';
import { toolApproval } from '../../src/features/tool-approval/tool-approval';
import { contextCompression } from '../../src/features/context-compression/context-compression';
import { modelGate } from '../fixtures/model-gate-middleware';
import { add, confirm, dangerous, echo, fail } from '../fixtures/tools';

/**
 * Middleware modules of the test suite's own that some scenarios use (`testMiddleware`): the
 * recorder's worker bundles them, and the replay of those scenarios does too.
 */
export const SCENARIO_MIDDLEWARE_MODULES = [join(__dirname, '..', 'fixtures', 'model-gate-middleware.ts')];

/** A tool that waits until cancelled. */
export const hang = defineTool({
  name: 'hang',
  description: 'Waits until cancelled.',
  input: z.object({}),
  run: (_input, { signal }) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('cancelled')))),
});

/** A tool that naps for `ms` milliseconds. */
export const nap = defineTool({
  name: 'nap',
  description: 'Naps.',
  input: z.object({ ms: z.number().int() }),
  run: ({ ms }) => new Promise((resolve) => setTimeout(() => resolve({ napped: ms }), ms)),
});

/** A verified identity a scenario's decisions are made by. */
interface VouchedBy {
  subject: string;
  groups: string[];
}

/** One recorded scenario. */
export interface Scenario {
  name: string;
  agent: string;
  prompt: string;
  maxTurns?: number;
  /** Cancel the run once it reached this turn. */
  cancelAtTurn?: number;
  /** For a server-managed agent: the messages sent to session `replay-<name>`, each running one run (the session's history is recorded). */
  sessionMessages?: string[];
  /** Decisions for the run's holds, in order (sent through the resume update, without the id). */
  decisions?: Array<Record<string, unknown>>;
  /** Each decision made by this verified identity (or the one at its index), with a keel server's proof of it (docs/auth.md); decisions then name their interruptId. */
  vouchedBy?: VouchedBy | VouchedBy[];
  /** Once the run ended: reset it to its first workflow task and record the new run (decisions re-applied by the server). */
  resetToStart?: boolean;
  /** `return`: the run ends `interrupted` with its (signed) holds. */
  interruptMode?: 'return';
  /** Steering messages: each sent `afterMs` after the one before (the first after the run's first model call began). */
  steers?: Array<{ afterMs: number; text: string; interrupt?: boolean }>;
  /** Run first in return mode (unrecorded), then resume it with every hold approved: the resumed run is recorded. */
  resumeApproved?: boolean;
  /** Uses middleware of SCENARIO_MIDDLEWARE_MODULES: replayed with a bundle that has them. */
  testMiddleware?: boolean;
  /** Run first (unrecorded), then forked at this turn with these edits: the fork is recorded (docs/fork.md). */
  forkAt?: { turn: number; message?: string; toolResults?: Record<string, unknown> };
  /** Not a run: an eval suite of this one case (a prompt with its recorded tool answers) under two variants; the suite workflow is recorded (docs/eval.md). */
  evalCase?: { records: Array<{ name: string; input: unknown; output: unknown }>; scorers: Array<Record<string, unknown>> };
  /** The run belongs to this tenant (docs/tenants.md). */
  tenant?: string;
  /** The tenant's spend ledger is recorded, once the run ended, instead of the run (docs/tenants.md, "Spend per tenant"). */
  ledger?: boolean;
  /** The run continues as new at this many history events (docs/long-runs.md): the chain's second run, the first to take back a carried state, is recorded. */
  continueAsNewAt?: number;
}

/** The scenarios, in recording order. */
export const SCENARIOS: Scenario[] = [
  { name: 'parallel-tools', agent: 'replay-parallel', prompt: 'add and echo' },
  // A fork at turn 1 with turn 1's first tool result changed: turn 1's calls never run again.
  { name: 'forked', agent: 'replay-parallel', prompt: 'add and echo', forkAt: { turn: 1, toolResults: { '1.0': { sum: 4 } } } },
  // An eval suite: one case by hand, under the agent's model and another; a judge scores it.
  {
    name: 'eval-suite',
    agent: 'replay-parallel',
    prompt: 'add and echo',
    evalCase: {
      records: [
        { name: 'add', input: { a: 1, b: 2 }, output: { sum: 3 } },
        { name: 'echo', input: { v: 'x' }, output: { v: 'x' } },
        { name: 'echo', input: { v: 'y' }, output: { v: 'y' } },
      ],
      scorers: [{ contains: 'three' }, { tool: 'add' }, { judge: { model: 'scripted/replay-judge', rubric: 'It adds.' } }],
    },
  },
  // The same runs with every model and tool call a local activity (docs/local-calls.md).
  { name: 'local-calls', agent: 'replay-local', prompt: 'add and echo' },
  { name: 'local-retry-fallback', agent: 'replay-local-resilient', prompt: 'survive' },
  { name: 'tool-usage', agent: 'replay-tool-usage', prompt: 'spend' },
  // The same spend counted in its tenant's ledger (local chargeSpend calls), stopped at its third call; then the ledger itself.
  { name: 'tenant-budget', agent: 'replay-tenant-budget', prompt: 'spend', tenant: 'replay-tenant' },
  { name: 'spend-ledger', agent: 'replay-tenant-budget', prompt: 'spend', tenant: 'replay-ledger', ledger: true },
  // A hold bound by approver rules, approved by a verified identity (its proof checked by an activity), with
  // the hold's notices POSTed to the recorder's webhook from activities of the run (docs/auth.md, docs/notify.md).
  {
    name: 'approvers-and-notices',
    agent: 'replay-approvers',
    prompt: 'guarded',
    decisions: [{ interruptId: 'i1', approved: true }],
    vouchedBy: { subject: 'alice', groups: ['admins'] },
  },
  // A hold put to a vote (docs/auth.md, "Many approvers"): two admins approve, each vote verified; its escalation timer is cancelled.
  {
    name: 'quorum',
    agent: 'replay-quorum',
    prompt: 'guarded',
    decisions: [
      { interruptId: 'i1', approved: true },
      { interruptId: 'i1', approved: true },
    ],
    vouchedBy: [
      { subject: 'alice', groups: ['admins'] },
      { subject: 'bob', groups: ['admins', 'ops'] },
    ],
  },
  { name: 'tool-failure', agent: 'replay-failure', prompt: 'fail please' },
  { name: 'max-turns', agent: 'replay-max-turns', prompt: 'loop', maxTurns: 1 },
  { name: 'cancelled', agent: 'replay-cancel', prompt: 'hang', cancelAtTurn: 1 },
  { name: 'retry-fallback', agent: 'replay-resilient', prompt: 'survive' },
  { name: 'soft-tool-errors', agent: 'replay-soft', prompt: 'recover' },
  {
    name: 'approval-and-budget',
    agent: 'replay-guarded',
    prompt: 'guarded',
    decisions: [{ approved: true }, { approved: true }, { approved: false, reason: 'no' }],
  },
  // Two holds in two turns, decided, then the run reset to its start: the server re-applies both
  // decisions before the holds come back; each is kept until its hold is raised again.
  {
    name: 'reset-with-decisions',
    agent: 'replay-reset',
    prompt: 'again',
    decisions: [{ approved: true }, { approved: false, reason: 'no' }],
    resetToStart: true,
  },
  {
    // Recorded with the middleware contract of defineMiddleware: decisions routed by position.
    name: 'restarts-and-stacked-budgets',
    agent: 'replay-restarts',
    prompt: 'confirm it',
    decisions: [
      { approved: true },
      { approved: true },
      { restart: { answer: 'yes' }, input: { question: 'go now?' } },
      { approved: true },
      { restart: { answer: 'yes' } },
    ],
  },
  // A synchronous delegation (a child run) whose artifact is merged, with a sub-agent hold decided at the root.
  { name: 'delegation', agent: 'replay-orchestrator', prompt: 'delegate', decisions: [{ approved: true }] },
  // A background task: launched, waited for, collected.
  { name: 'background-task', agent: 'replay-dispatcher', prompt: 'dispatch' },
  // A session: two turns, the second detached and waited for.
  { name: 'session', agent: 'replay-session', prompt: '', sessionMessages: ['remember 42', 'what was it?'] },
  // ContextCompression: tiktoken counts (local activities), older responses truncated, then a summary by a second model.
  { name: 'compression', agent: 'replay-compression', prompt: 'research it' },
  // Holds signed against forgery: a hold returned (signed), and a signed hold resumed (its proof checked).
  { name: 'returned-hold', agent: 'replay-signed', prompt: 'hold it', interruptMode: 'return' },
  { name: 'resumed-hold', agent: 'replay-signed', prompt: 'hold it', resumeApproved: true },
  // One budget for the tree: a sync sub-agent tells the root's ledger of each call (signals) and
  // asks it before each (an activity); past the limit the root holds before its next model call.
  { name: 'tree-budget', agent: 'replay-tree', prompt: 'spend', decisions: [{ approved: true }] },
  // Continued as new at each turn: the second run waits for the background task the first started and starts the
  // next sub-agent run (numbered on from the first's), both read from the state it carried. Recorded before features
  // kept their state in slots of their own: a chain an older worker continued goes on.
  { name: 'continued-tasks', agent: 'replay-continued', prompt: 'dispatch', continueAsNewAt: 1 },
  // Structured output: a tool call, an answer that fails the schema, the retry's valid one.
  { name: 'structured-output', agent: 'replay-structured', prompt: 'weather?' },
  // Steering: an interrupting steer cancels the slow first model call, which is
  // made again with it; a second steer arrives while the nap tool runs and goes into the next call.
  {
    name: 'steered',
    agent: 'replay-steered',
    prompt: 'ponder',
    steers: [
      { afterMs: 500, text: 'stop pondering, nap instead', interrupt: true },
      { afterMs: 1000, text: 'then say done' },
    ],
  },
  // A hold raised inside the model-call stage (the test suite's model gate) waits; an interrupting
  // steer then cancels nothing, and the model call made once the hold is decided takes the message.
  {
    name: 'steered-during-hold',
    agent: 'replay-steered-hold',
    prompt: 'start',
    steers: [{ afterMs: 500, text: 'answer in French', interrupt: true }],
    decisions: [{ restart: { go: true } }],
    testMiddleware: true,
  },
];

/** The registry the scenarios run against. */
export function scenarioRegistry(): Registry {
  const structured = scriptedModel({
    name: 'scripted/replay-structured',
    script: [toolCallReply({ name: 'echo', input: { v: 'Oslo' } }), objectReply({ city: 'Oslo', celsius: 'cold' }), objectReply({ city: 'Oslo', celsius: 4 })],
  });
  const judge = scriptedModel({ name: 'scripted/replay-judge', script: () => objectReply({ pass: true, reason: 'it adds' }) });
  const parallel = scriptedModel({
    name: 'scripted/replay-parallel',
    script: [
      toolCallReply(
        [
          { name: 'add', input: { a: 1, b: 2 } },
          { name: 'echo', input: { v: 'x' } },
        ],
        { usage: { inputTokens: 5, outputTokens: 3 } },
      ),
      toolCallReply({ name: 'echo', input: { v: 'y' } }, { usage: { inputTokens: 8, outputTokens: 2 } }),
      textReply('three and x and y', { usage: { inputTokens: 12, outputTokens: 4 } }),
    ],
  });
  const failure = scriptedModel({
    name: 'scripted/replay-failure',
    script: [
      toolCallReply([
        { name: 'fail', input: { message: 'boom' } },
        { name: 'echo', input: { v: 'ok' } },
      ]),
    ],
  });
  const maxTurns = scriptedModel({
    name: 'scripted/replay-max-turns',
    script: [toolCallReply({ name: 'echo', input: { v: '1' } }), toolCallReply({ name: 'echo', input: { v: '2' } })],
  });
  const cancel = scriptedModel({ name: 'scripted/replay-cancel', script: [toolCallReply({ name: 'hang', input: {} }, { text: 'waiting' })] });
  // turn 1: primary UNAVAILABLE (retried after a timer), then NOT_FOUND → secondary asks for echo;
  // turn 2: primary skipped, secondary answers
  const resilientPrimary = scriptedModel({
    name: 'scripted/replay-resilient',
    script: [errorReply('UNAVAILABLE', 'busy'), errorReply('NOT_FOUND', 'retired')],
  });
  const resilientSecondary = scriptedModel({
    name: 'scripted/replay-resilient-secondary',
    script: [toolCallReply({ name: 'echo', input: { v: 'x' } }), textReply('survived')],
  });
  // turn 1: dangerous held by the gate (approved) then by the budget (approved); echo held by
  // the gate (denied); turn 2: text
  const guarded = scriptedModel({
    name: 'scripted/replay-guarded',
    script: [
      toolCallReply(
        [
          { name: 'dangerous', input: { v: 'x' } },
          { name: 'echo', input: { v: 'y' } },
        ],
        { usage: { inputTokens: 20 } },
      ),
      textReply('guarded done'),
    ],
  });
  // turn 1: dangerous, held and approved; turn 2: echo, held and denied; turn 3: text
  const resetModel = scriptedModel({
    name: 'scripted/replay-reset',
    script: [toolCallReply({ name: 'dangerous', input: { v: 'x' } }), toolCallReply({ name: 'echo', input: { v: 'y' } }), textReply('reset done')],
  });
  // turn 1 spends 20: confirm is held by the gate (approved), then once by the stacked budgets
  // (approved, renewing both); the tool asks its question, answered with another input, so the
  // gate holds it again (approved); the fresh call asks again, answered; turn 2: text
  const restarts = scriptedModel({
    name: 'scripted/replay-restarts',
    script: [toolCallReply({ name: 'confirm', input: { question: 'go?' } }, { usage: { inputTokens: 20 } }), textReply('restarted')],
  });
  // orchestrator turn 1: delegate to the writer (writes report.md, then its gated echo is approved at the root); turn 2: text
  const writer = scriptedModel({
    name: 'scripted/replay-writer',
    script: [
      toolCallReply([
        { name: 'write_artifact', input: { name: 'report.md', content: 'the report' } },
        { name: 'echo', input: { v: 'w' } },
      ]),
      textReply('written'),
    ],
  });
  const orchestrator = scriptedModel({
    name: 'scripted/replay-orchestrator',
    script: [toolCallReply({ name: 'delegate_to_replay-writer', input: { task: 'write' } }), textReply('delegated')],
  });
  // dispatcher turn 1: the quick writer in the background; turn 2: wait for it; turn 3: text
  const dispatcherModel = scriptedModel({
    name: 'scripted/replay-dispatcher',
    script: (request) => {
      const launched = request.messages
        .flatMap((message) => message.content)
        .find((part) => 'toolResponse' in part && part.toolResponse.name === 'delegate_to_replay-quick-writer');
      if (!launched) return toolCallReply({ name: 'delegate_to_replay-quick-writer', input: { task: 'write', background: true } });
      if (request.messages.at(-1)?.content.some((part) => 'toolResponse' in part && part.toolResponse.name === 'wait_for_background_tasks'))
        return textReply('collected');
      return toolCallReply({
        name: 'wait_for_background_tasks',
        input: { taskIds: [(launched as { toolResponse: { output: { taskId: string } } }).toolResponse.output.taskId] },
      });
    },
  });
  // asks for dangerous (held by the gate) until it has an answer, then says done
  const signed = scriptedModel({
    name: 'scripted/replay-signed',
    script: (request) => (request.messages.at(-1)?.role === 'tool' ? textReply('signed done') : toolCallReply({ name: 'dangerous', input: { v: 'x' } })),
  });
  // turn 1: the quick writer in the background; turn 2: wait for it, and run it again in the foreground; turn 3: text
  const continuedModel = scriptedModel({
    name: 'scripted/replay-continued',
    script: (request) => {
      const results = request.messages.flatMap((message) => message.content).filter((part) => 'toolResponse' in part);
      if (results.length === 0) return toolCallReply({ name: 'delegate_to_replay-quick-writer', input: { task: 'write', background: true } });
      if (results.length > 1) return textReply('continued done');
      const taskId = (results[0] as { toolResponse: { output: { taskId: string } } }).toolResponse.output.taskId;
      return toolCallReply([
        { name: 'wait_for_background_tasks', input: { taskIds: [taskId] } },
        { name: 'delegate_to_replay-quick-writer', input: { task: 'write again' } },
      ]);
    },
  });
  const quickWriter = scriptedModel({ name: 'scripted/replay-quick-writer', script: [textReply('quickly written')] });
  const sessionModel = scriptedModel({
    name: 'scripted/replay-session',
    script: (request) => textReply(`heard ${request.messages.filter((message) => message.role === 'user').length}`, { usage: { inputTokens: 3 } }),
  });
  // turn 1: fail (covered) and add with bad input (covered); turn 2: text
  const soft = scriptedModel({
    name: 'scripted/replay-soft',
    script: [
      toolCallReply([
        { name: 'fail', input: { message: 'flaky' } },
        { name: 'add', input: { a: 'x', b: 1 } },
      ]),
      textReply('recovered'),
    ],
  });
  // compression turns 1–4: echo a long text each time; turn 5: text. The summarizer answers once asked.
  const compressing = scriptedModel({
    name: 'scripted/replay-compression',
    script: [1, 2, 3, 4]
      .map((turn) => toolCallReply({ name: 'echo', input: { v: `${turn} ${'long text '.repeat(40)}` } }, { usage: { inputTokens: 40 * turn } }))
      .concat(textReply('compressed')),
  });
  const summarizer = scriptedModel({
    name: 'scripted/replay-summarizer',
    script: () => textReply('what happened so far', { usage: { inputTokens: 9, outputTokens: 4 } }),
  });
  // tree: the root (5) delegates; the child spends 20 (echo), asks, spends 20 more and answers;
  // the tree is at 45 of 30: the root holds before its next call, approved, answers
  const treeRoot = scriptedModel({
    name: 'scripted/replay-tree',
    script: [
      toolCallReply({ name: 'delegate_to_replay-tree-child', input: { task: 'spend' } }, { usage: { totalTokens: 5 } }),
      textReply('tree done', { usage: { totalTokens: 5 } }),
    ],
  });
  const treeChild = scriptedModel({
    name: 'scripted/replay-tree-child',
    script: [toolCallReply({ name: 'echo', input: { v: 'x' } }, { usage: { totalTokens: 20 } }), textReply('child done', { usage: { totalTokens: 20 } })],
  });
  // turn 1: a model call of a minute, cancelled by a steer, made again: nap (a second steer meanwhile); turn 2: text
  const steered = scriptedModel({
    name: 'scripted/replay-steered',
    script: [{ delayMs: 60_000, text: 'still pondering' }, toolCallReply({ name: 'nap', input: { ms: 3000 } }), textReply('done')],
  });
  const gated = scriptedModel({ name: 'scripted/replay-steered-hold', script: [textReply('réponse')] });
  return new Registry().add(
    gated,
    defineAgent({ name: 'replay-steered-hold', model: gated.name, use: [modelGate({})] }),
    steered,
    nap,
    defineAgent({ name: 'replay-steered', model: steered.name, tools: [nap] }),
    treeRoot,
    treeChild,
    defineAgent({ name: 'replay-tree-child', description: 'Spends.', model: treeChild.name, tools: [echo] }),
    defineAgent({
      name: 'replay-tree',
      model: treeRoot.name,
      use: [budget({ limit: { totalTokens: 30 }, interrupt: true }), agents({ agents: ['replay-tree-child'] })],
    }),
    compressing,
    summarizer,
    defineAgent({
      name: 'replay-compression',
      model: compressing.name,
      tools: [echo],
      maxTurns: 10,
      use: [
        contextCompression({
          maxInputTokens: 250,
          tokenizer: 'tiktoken',
          toolResponses: { maxChars: 40, preserveRecent: 1 },
          summarize: { model: summarizer.name, preserveRecent: 3 },
        }),
      ],
    }),
    add,
    echo,
    fail,
    hang,
    parallel,
    judge,
    failure,
    maxTurns,
    cancel,
    resilientPrimary,
    resilientSecondary,
    soft,
    guarded,
    dangerous,
    confirm,
    restarts,
    writer,
    orchestrator,
    dispatcherModel,
    quickWriter,
    continuedModel,
    sessionModel,
    defineAgent({ name: 'replay-session', model: sessionModel.name, session: 'server' }),
    defineAgent({
      name: 'replay-writer',
      description: 'Writes reports.',
      model: writer.name,
      tools: [echo],
      use: [artifacts(), toolApproval({ allowedTools: ['write_artifact'] })],
    }),
    defineAgent({ name: 'replay-orchestrator', model: orchestrator.name, use: [agents({ agents: ['replay-writer'] }), artifacts()] }),
    defineAgent({ name: 'replay-quick-writer', model: quickWriter.name }),
    defineAgent({ name: 'replay-dispatcher', model: dispatcherModel.name, use: [agents({ agents: ['replay-quick-writer'], async: true })] }),
    defineAgent({ name: 'replay-continued', model: continuedModel.name, use: [agents({ agents: ['replay-quick-writer'], async: true })] }),
    defineAgent({
      name: 'replay-restarts',
      model: restarts.name,
      tools: [confirm],
      use: [toolApproval(), budget({ limit: { inputTokens: 10 }, interrupt: true }), budget({ limit: { inputTokens: 15 }, interrupt: true })],
    }),
    signed,
    defineAgent({ name: 'replay-signed', model: signed.name, tools: [dangerous], use: [toolApproval()] }),
    resetModel,
    defineAgent({ name: 'replay-reset', model: resetModel.name, tools: [dangerous, echo], use: [toolApproval()] }),
    defineAgent({
      name: 'replay-guarded',
      model: guarded.name,
      tools: [dangerous, echo],
      use: [toolApproval(), budget({ limit: { inputTokens: 10 }, interrupt: true })],
    }),
    defineAgent({
      name: 'replay-resilient',
      model: resilientPrimary.name,
      tools: [echo],
      use: [fallback({ models: [resilientSecondary.name] }), retry({ maxRetries: 1, initialDelayMs: 50, noJitter: true })],
    }),
    defineAgent({
      name: 'replay-local-resilient',
      model: resilientPrimary.name,
      tools: [echo],
      use: [fallback({ models: [resilientSecondary.name] }), retry({ maxRetries: 1, initialDelayMs: 50, noJitter: true })],
      local: { models: true, tools: true },
    }),
    defineAgent({ name: 'replay-soft', model: soft.name, tools: [fail, add], use: [softToolErrors()] }),
    defineAgent({ name: 'replay-approvers', model: signed.name, tools: [dangerous], use: [toolApproval()], approvers: { dangerous: ['group:admins'] } }),
    defineAgent({
      name: 'replay-quorum',
      model: signed.name,
      tools: [dangerous],
      use: [toolApproval()],
      approvers: { dangerous: { approvers: ['group:admins'], quorum: 2, escalateAfter: '1 hour', escalateTo: ['group:cfo'] } },
    }),
    defineAgent({ name: 'replay-parallel', model: parallel.name, system: 'Use tools.', tools: [add, echo] }),
    defineAgent({ name: 'replay-local', model: parallel.name, system: 'Use tools.', tools: [add, echo], local: { models: true, tools: true } }),
    defineAgent({ name: 'replay-failure', model: failure.name, tools: [fail, echo] }),
    defineAgent({ name: 'replay-max-turns', model: maxTurns.name, tools: [echo] }),
    defineAgent({ name: 'replay-cancel', model: cancel.name, tools: [hang] }),
    structured,
    defineAgent({ name: 'replay-structured', model: structured.name, tools: [echo], output: z.object({ city: z.string(), celsius: z.number() }) }),
    spending,
    paidLookup,
    defineAgent({ name: 'replay-tool-usage', model: spending.name, tools: [paidLookup], use: [budget({ limit: { cost: 1 } })] }),
    defineAgent({ name: 'replay-tenant-budget', model: spending.name, tools: [paidLookup], use: [budget({ limit: { cost: 1 }, scope: 'tenant' })] }),
  );
}

/** A tool that reports what it spent: $0.6 a call. */
const paidLookup = defineTool({
  name: 'paid_lookup',
  description: 'Looks up, for a fee.',
  input: z.object({ q: z.string() }),
  run: ({ q }, ctx) => {
    ctx.reportUsage({ cost: 0.6 });
    return { found: q };
  },
});

/** A priced, rate-limited model that keeps asking for the paid lookup: the Budget stops it at its third call. */
const spending = Object.assign(
  scriptedModel({
    name: 'scripted/replay-tool-usage',
    script: [1, 2, 3].map((n) => toolCallReply({ name: 'paid_lookup', input: { q: String(n) } }, { usage: { inputTokens: 100, outputTokens: 10 } })),
  }),
  { price: { inputPerMTok: 1, outputPerMTok: 2 }, rateLimit: { concurrency: 1 } },
);
