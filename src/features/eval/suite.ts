/**
 * Eval suites (docs/eval.md): what a suite file says (cases, scorers, variants, the policy for a
 * tool call the record lacks), what the suite workflow is handed once the cases are read (each
 * case's prompt and recorded tool answers), and what it reports. zod schemas, each an error
 * naming the field. Pure: safe in workflow code.
 */
import { PrincipalSchema } from '../../core/principal';
import { z } from 'zod';
import { MessageSchema } from '../../core/messages';

/** What a case's run does with a tool call its record lacks. */
export const MissingPolicySchema = z.enum(['fail', 'real', 'stub']);

/** One recorded tool call: the same tool with the same input is answered with `output`. */
export const ToolRecordSchema = z.object({ name: z.string().min(1), input: z.unknown(), output: z.unknown() }).strict();
export type ToolRecord = z.infer<typeof ToolRecordSchema>;

/** One scorer: each passes or fails a case's answer, saying why. */
export const ScorerSchema = z.union([
  z.object({ contains: z.string() }).strict(),
  z.object({ notContains: z.string() }).strict(),
  z.object({ equals: z.string() }).strict(),
  z
    .object({
      matches: z.string().refine(
        (pattern) => {
          try {
            new RegExp(pattern);
            return true;
          } catch {
            return false;
          }
        },
        { error: 'not a regular expression JavaScript reads' },
      ),
    })
    .strict(),
  /** The answer is the recorded run's answer, word for word. */
  z.object({ sameAsRecorded: z.literal(true) }).strict(),
  /** The run called this tool (with an input that has these fields, when given). */
  z.object({ tool: z.string().min(1), input: z.record(z.string(), z.unknown()).optional() }).strict(),
  z.object({ noTool: z.string().min(1) }).strict(),
  /** The answer (the structured output, or the text read as JSON) matches this JSON Schema. */
  z.object({ schema: z.record(z.string(), z.unknown()) }).strict(),
  /** A model reads the rubric, the prompt and the answer, and says pass or fail (and why). */
  z.object({ judge: z.object({ rubric: z.string().min(1), model: z.string().min(1) }).strict() }).strict(),
]);
export type Scorer = z.infer<typeof ScorerSchema>;

/** A variant: the agent as it is, or with another agent, model, or build (the task queue its workers poll). */
export const VariantSchema = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'a name of 1 to 64 letters, digits, ".", "_" or "-"'),
    agent: z.string().min(1).optional(),
    model: z.string().min(1).optional(),
    taskQueue: z.string().min(1).optional(),
  })
  .strict();
export type Variant = z.infer<typeof VariantSchema>;

/** A case as a suite file writes it: a recorded run (a history file), runs on the server (a query), or by hand. */
export const SuiteCaseSchema = z
  .object({
    name: z.string().min(1).optional(),
    /** A file `keel history export` wrote (relative to the suite file). */
    history: z.string().min(1).optional(),
    /** A visibility query: each run it lists (completed ones) is a case. */
    query: z.string().min(1).optional(),
    /** How many runs a query takes at most (default 100). */
    limit: z.number().int().min(1).max(10_000).optional(),
    /** A case written by hand: the user's message... */
    prompt: z.string().min(1).optional(),
    /** ...and the tool answers it may use. */
    tools: z.array(ToolRecordSchema).optional(),
    /** The agent of a hand-written case (default: the suite's). */
    agent: z.string().min(1).optional(),
    scorers: z.array(ScorerSchema).default([]),
  })
  .strict()
  .refine((entry) => [entry.history, entry.query, entry.prompt].filter((given) => given !== undefined).length === 1, {
    error: 'a case has exactly one of history, query or prompt',
  });

/** A suite file (YAML, or a TypeScript module's default export). */
export const SuiteFileSchema = z
  .object({
    name: z.string().min(1).optional(),
    /** The agent cases run (a recorded run's own agent when absent). */
    agent: z.string().min(1).optional(),
    /** The share of cases a variant must pass (0 to 1, default 1: all). */
    threshold: z.number().min(0).max(1).default(1),
    missing: MissingPolicySchema.default('fail'),
    /** Tools `missing: real` may call for real. */
    safe: z.array(z.string()).default([]),
    /** What `missing: stub` answers, by tool (default null). */
    stubs: z.record(z.string(), z.unknown()).default({}),
    /** Case runs under way at once (default 8). */
    concurrency: z.number().int().min(1).max(100).default(8),
    variants: z
      .array(VariantSchema)
      .min(1)
      .default([{ name: 'current' }]),
    /** Scorers of every case (each case adds its own). */
    scorers: z.array(ScorerSchema).default([]),
    cases: z.array(SuiteCaseSchema).min(1),
  })
  .strict()
  .refine((suite) => new Set(suite.variants.map((variant) => variant.name)).size === suite.variants.length, {
    error: 'variant names must differ',
    path: ['variants'],
  });
export type SuiteFile = z.output<typeof SuiteFileSchema>;

/** A case as the suite workflow runs it. */
export const EvalCaseSchema = z
  .object({
    name: z.string(),
    agent: z.string().min(1),
    /** The conversation the run starts with (the recorded run's input, or the prompt). */
    messages: z.array(MessageSchema).min(1),
    records: z.array(ToolRecordSchema),
    /** The recorded run's answer (for `sameAsRecorded`). */
    recordedText: z.string().optional(),
    scorers: z.array(ScorerSchema),
    /** Where the case came from (a file, a run id), for the report. */
    source: z.string(),
    /** Whom the recorded run belonged to: the case's run belongs to them too (docs/tenants.md). */
    principal: PrincipalSchema.optional(),
    /** Its run's Temporal priority: the suite's, with its tenant's fairness key and weight (docs/tenants.md). */
    priority: z
      .object({ priorityKey: z.number().int().min(1).max(5), fairnessKey: z.string().max(64).optional(), fairnessWeight: z.number().optional() })
      .strict()
      .optional(),
  })
  .strict();
export type EvalCase = z.infer<typeof EvalCaseSchema>;

/** The suite workflow's input. */
export const EvalSuiteInputSchema = z
  .object({
    name: z.string(),
    threshold: z.number().min(0).max(1),
    missing: MissingPolicySchema,
    safe: z.array(z.string()),
    stubs: z.record(z.string(), z.unknown()),
    concurrency: z.number().int().min(1),
    variants: z.array(VariantSchema).min(1),
    cases: z.array(EvalCaseSchema).min(1),
  })
  .strict();
export type EvalSuiteInput = z.infer<typeof EvalSuiteInputSchema>;

/** One scorer's verdict. */
export interface ScoreResult {
  scorer: string;
  passed: boolean;
  reason: string;
}

/** One case under one variant. */
export interface CaseReport {
  case: string;
  variant: string;
  source: string;
  /** The case's run. */
  runId: string;
  passed: boolean;
  /** The run's answer (its text), or why it failed. */
  text?: string;
  error?: string;
  scores: ScoreResult[];
  toolCalls: number;
}

/** A variant's tally. */
export interface VariantReport {
  name: string;
  passed: number;
  total: number;
  /** passed / total. */
  score: number;
  /** score >= the suite's threshold. */
  ok: boolean;
}

/** What the suite workflow returns. */
export interface SuiteReport {
  name: string;
  threshold: number;
  cases: CaseReport[];
  variants: VariantReport[];
  /** Every variant reached the threshold. */
  ok: boolean;
}

/** The memo key of a case's run: the suite it belongs to. */
export const EVAL_MEMO_KEY = 'keelEval';

/** Workflow type name of a suite. */
export const EVAL_SUITE_WORKFLOW = 'keelEvalSuite';
