/**
 * Holds: the one contract between a stage that holds a tool call (or a model call) for a
 * person's decision and whoever decides it. A middleware declares each kind of hold it raises
 * (`defineHold`): a zod schema for the data shown, a zod schema for the decision it accepts,
 * and the one line a person is asked. The run keeps the data as given, checks a decision once
 * against the raising kind's schema, and hands the raising stage the parsed value; a client
 * reads `kind`, `question`, `data` and the decision's JSON Schema from `status` and can render
 * the right form without knowing the middleware.
 *
 * A decision arrives as one of three envelopes, the reference's verbs: `{ approved, reason? }`
 * (approve or deny), `{ respond }` (a stand-in output) and `{ restart, input? }` (run the call
 * again, handing the stage `restart`). The envelope becomes the stage's payload through
 * `resumption` (the same function for a live decision, a return-mode resume and a decision
 * forwarded to a sub-agent), which parses it with the kind's decision schema.
 * Pure: safe in workflow code.
 */
import { z } from 'zod';
import { describeUndecodable, isUndecodable } from './undecodable';
import { toInputJsonSchema } from './zod-schema';

/** What a stand-in output does to a hold: answers the call (`answer`) or goes to the stage as `{ respond }` (`decide`). */
export type RespondMode = 'answer' | 'decide';

/** A kind of hold a middleware raises, as it declares it. */
export interface HoldKind<Data extends z.ZodType = z.ZodType, Decision extends z.ZodType = z.ZodType> {
  /** Shown as the hold's `kind` (`approval`, `budget`, ...). */
  kind: string;
  /** The one line a person is asked, made from the hold's data (e.g. "Approve book_train?"). */
  question(data: z.output<Data>, call: { toolName: string }): string;
  /** The data the stage raises the hold with (a JSON object), shown as given. */
  data: Data;
  /**
   * What a decision hands the raising stage, parsed from its payload: `{ approved, reason? }`
   * for an approve or deny, the `restart` value of a restart, `{ respond }` for a stand-in output
   * of a `decide` kind. The stage receives the parsed value. Shown to clients as JSON Schema.
   */
  decision: Decision;
  /** What a stand-in output (`respond`) does: `answer` (default) answers the call, `decide` hands it to the stage. */
  respond?: RespondMode;
  /** One decision answers every pending hold this middleware raised in the run. */
  sharedDecision?: boolean;
}

/** Declares a kind of hold (see `HoldKind`): `defineHold({ kind, question, data, decision })`. */
export function defineHold<Data extends z.ZodType, Decision extends z.ZodType>(hold: HoldKind<Data, Decision>): HoldKind<Data, Decision> {
  return hold;
}

/** The tool name a hold before a model call shows (a Budget's, once the tree is over its limit). */
export const MODEL_CALL_HOLD = '(next model call)';

/** A restart payload: an object for the raising stage, or `true` for a bare restart. */
export const ResumePayloadSchema = z.union([z.literal(true), z.record(z.string(), z.unknown())]);
export type ResumePayload = z.infer<typeof ResumePayloadSchema>;

/** The data of a hold nobody declared: any JSON object. */
const AnyHoldData = z.record(z.string(), z.unknown());

/**
 * The kind of a hold its raiser declared nothing for (a tool's own question, a middleware
 * without `holds`): any data, and the stage gets any restart payload exactly as sent.
 */
export function undeclaredHold(kind: string): HoldKind {
  return {
    kind,
    question(data, { toolName }) {
      const { message, question } = data as Record<string, unknown>;
      return typeof message === 'string' ? message : typeof question === 'string' ? question : `decide the held call of ${toolName}`;
    },
    data: AnyHoldData,
    decision: ResumePayloadSchema,
  };
}

/**
 * What a decision may say about the hold it is meant for: when given, the run refuses it for
 * a hold of another tool (or call). keel's client fills them in, so a decision the server
 * re-applies after a `workflow reset` never lands on a different call that got the same id.
 */
const HOLD_TARGET = {
  /** The held tool's name. */
  toolName: z.string().min(1).optional(),
  /** The held call's ref (its position in the model message). */
  ref: z.string().optional(),
  /** Who decides (a person, a service): recorded with the decision in status, the result and history. */
  decidedBy: z.string().min(1).max(200).optional(),
  /** Set by a run that forwards a decision to the sub-agent run holding the call: its own run id. */
  forwardedFrom: z.string().min(1).optional(),
  /** The verified decider's groups, as the keel server that verified them signed them (docs/auth.md). */
  decidedByGroups: z.array(z.string()).max(200).optional(),
  /** A keel server's proof of who decided (`decidedBy`, `decidedByGroups`), for a hold only some may decide. */
  decidedByProof: z.string().min(1).optional(),
};

/** A decision on a pending hold, as the `resume` update or signal carries it. */
const ApprovalSchema = z.object({ interruptId: z.string().min(1), approved: z.boolean(), reason: z.string().optional(), ...HOLD_TARGET }).strict();
const RespondSchema = z.object({ interruptId: z.string().min(1), respond: z.unknown(), ...HOLD_TARGET }).strict();
const RestartSchema = z
  .object({
    interruptId: z.string().min(1),
    restart: ResumePayloadSchema,
    /** Runs the call with this input instead; every gate checks it again. */
    input: z.unknown().optional(),
    ...HOLD_TARGET,
  })
  .strict();
export const DecisionSchema = z.union([ApprovalSchema, RespondSchema, RestartSchema]);
export type Decision = z.infer<typeof DecisionSchema>;

/** The three shapes of a decision, by the key that tells them apart. */
const DECISION_SHAPES = [
  { key: 'approved', schema: ApprovalSchema, shape: '{ interruptId, approved, reason? } (approve or deny)' },
  { key: 'respond', schema: RespondSchema, shape: '{ interruptId, respond } (answer the call with a stand-in output)' },
  { key: 'restart', schema: RestartSchema, shape: '{ interruptId, restart, input? } (run the call again)' },
] as const;

/**
 * Parses a decision, telling its three shapes apart by their key (`approved`, `respond` or
 * `restart`) so an error names the shape meant and the bad field, e.g.
 * `malformed decision { interruptId, approved, reason? } (approve or deny): approved: expected boolean, received string`.
 */
export function parseDecision(raw: unknown): { success: true; data: Decision } | { success: false; error: string } {
  if (isUndecodable(raw)) return { success: false, error: `malformed decision: ${describeUndecodable(raw)}` };
  const all = `one of ${DECISION_SHAPES.map((entry) => entry.shape).join(', ')}`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return {
      success: false,
      error: `malformed decision: expected a JSON object, ${all}; got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw}`,
    };
  const present = DECISION_SHAPES.filter((entry) => entry.key in raw);
  if (present.length === 0) return { success: false, error: `malformed decision: expected ${all}; got the keys ${Object.keys(raw).join(', ') || '(none)'}` };
  if (present.length > 1)
    return { success: false, error: `malformed decision: it has ${present.map((entry) => `"${entry.key}"`).join(' and ')}; send exactly one of them (${all})` };
  const [{ schema, shape }] = present as [(typeof DECISION_SHAPES)[number]];
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { success: true, data: parsed.data };
  return { success: false, error: `malformed decision ${shape}: ${issuesText(parsed.error)}` };
}

/** A zod error as `field: what is wrong; ...` (for a union, what each of its forms found wrong). */
function issuesText(error: { issues: readonly z.core.$ZodIssue[] }, prefix: PropertyKey[] = []): string {
  return error.issues
    .map((issue) => {
      const path = [...prefix, ...issue.path];
      if (issue.code === 'invalid_union' && issue.errors.length) {
        const forms = issue.errors.map((issues, index) => `(${index + 1}) ${issuesText({ issues }, path)}`);
        return `${path.join('.') || '(root)'}: fits none of its forms: ${forms.join(' ')}`;
      }
      return `${path.map(String).join('.') || '(root)'}: ${issue.message.replace(/^Invalid input: /, '')}`;
    })
    .join('; ');
}

/** Why a decision does not fit the hold with its id (another tool or call), or undefined when it fits. */
export function holdMismatch(decision: Decision, hold: { id: string; toolName?: string; ref?: string }): string | undefined {
  const meant = decision.toolName !== undefined && decision.toolName !== hold.toolName;
  const call = decision.ref !== undefined && hold.ref !== undefined && decision.ref !== hold.ref;
  if (!meant && !call) return undefined;
  const describe = (toolName?: string, ref?: string) => `tool "${toolName ?? '?'}"${ref !== undefined ? ` (ref ${ref})` : ''}`;
  return `hold ${hold.id} holds ${describe(hold.toolName, hold.ref)}; the decision is for ${describe(decision.toolName ?? hold.toolName, decision.ref ?? hold.ref)}`;
}

/** What a decision comes to for the held call: a stand-in output that answers it, or a restart with the stage's parsed payload. */
export type Resumption =
  /** Answers the call (still to be checked against the tool's output schema). */
  | { output: unknown }
  /** Runs the call again: `payload` (parsed by the kind's decision schema) goes to the raising stage; `input` replaces the call's. */
  | { payload: unknown; input?: unknown };

/** The envelope parts `resumption` reads: what `Decision` carries, without its addressing. */
export type DecisionBody = { approved: boolean; reason?: string } | { respond: unknown } | { restart: ResumePayload; input?: unknown };

/** The payload an envelope hands to the raising stage before its kind parses it. */
function rawPayload(body: DecisionBody): unknown {
  if ('restart' in body) return body.restart;
  if ('respond' in body) return { respond: body.respond };
  return body.reason !== undefined ? { approved: body.approved, reason: body.reason } : { approved: body.approved };
}

/**
 * The alternatives a kind declares for its decision: its schema without a top-level `.catch()`
 * fallback. A kind may answer any payload it does not take with a fallback (ToolApproval and
 * Budget deny, as the reference treats a restart that does not approve); a person's decision is
 * held to what the kind declares, so a mistyped field is refused rather than taken as that
 * fallback.
 */
function declaredDecision(hold: HoldKind): z.ZodType {
  return hold.decision instanceof z.ZodCatch ? (hold.decision.unwrap() as z.ZodType) : hold.decision;
}

/** The alternatives a decision schema's JSON Schema offers, as a person reads them: `{ approved: boolean, reason?: string }`. */
function describeAlternatives(hold: HoldKind): string {
  const describe = (schema: Record<string, unknown>): string => {
    const forms = (schema.anyOf ?? schema.oneOf) as Array<Record<string, unknown>> | undefined;
    if (forms) return forms.map(describe).join(' or ');
    if (schema.const !== undefined) return JSON.stringify(schema.const);
    const properties = schema.properties as Record<string, Record<string, unknown>> | undefined;
    if (schema.type !== 'object' || !properties) return String(schema.type ?? 'any JSON value');
    const required = new Set((schema.required as string[] | undefined) ?? []);
    const fields = Object.entries(properties).map(([name, field]) => `${name}${required.has(name) ? '' : '?'}: ${describe(field)}`);
    return `{ ${fields.join(', ')} }`;
  };
  return describe(decisionJsonSchema(hold));
}

/**
 * What a decision on a hold of `hold`'s kind comes to, or why the kind refuses it (naming the
 * field). The one step from an envelope to the value a stage receives: a live decision, a
 * return-mode resume and a decision forwarded to a sub-agent all go through it. `declared`
 * (a decision sent to a waiting run: the update, the signal, one forwarded down) must match one
 * of the kind's declared alternatives, and a refusal names them; a return-mode resume keeps the
 * reference's semantics, where the kind's fallback answers what it does not take.
 */
export function resumption(
  hold: HoldKind,
  body: DecisionBody,
  { declared = false }: { declared?: boolean } = {},
): { success: true; value: Resumption } | { success: false; error: string } {
  if ('respond' in body && (hold.respond ?? 'answer') === 'answer') return { success: true, value: { output: body.respond } };
  const schema = declared ? declaredDecision(hold) : hold.decision;
  const parsed = schema.safeParse(rawPayload(body));
  if (!parsed.success) return { success: false, error: `${issuesText(parsed.error)}${declared ? `; the hold takes ${describeAlternatives(hold)}` : ''}` };
  return { success: true, value: { payload: parsed.data, ...('input' in body && body.input !== undefined ? { input: body.input } : {}) } };
}

/** The JSON Schema of what a kind's decision accepts (its input side), for clients to render (a run's hold board makes it once per kind). */
export function decisionJsonSchema(hold: HoldKind): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = toInputJsonSchema(hold.decision);
  return schema;
}

export { takesApproval } from './takes-approval';

/** One vote on a hold that counts votes, as the run recorded it from a verified decider. */
export const VoteSchema = z.object({
  by: z.string(),
  groups: z.array(z.string()),
  approved: z.boolean(),
  reason: z.string().optional(),
  /** When it was taken (the run's clock, ISO 8601). */
  at: z.string(),
  /** Cast by one the hold escalated to (`escalateTo`): it decides alone. */
  escalated: z.boolean().optional(),
});
export type Vote = z.infer<typeof VoteSchema>;

/** A hold's votes as its status and memo show them: who voted, how many approvals it needs, who may still vote, when it escalates. */
export const HoldVotesSchema = z.object({
  quorum: z.number().int(),
  cast: z.array(VoteSchema),
  /** The rule's entries that may still vote (`group:<name>`, `user:<subject>`). */
  mayVote: z.array(z.string()),
  /** Approvals counted toward the quorum so far. */
  approvals: z.number().int(),
  /** When it escalates to `escalateTo` (ISO 8601), while it has not yet. */
  escalateAt: z.string().optional(),
  /** Set once it has escalated: whom it was put to. */
  escalatedTo: z.array(z.string()).optional(),
  /** The run's owner and the turn's sender may not vote. */
  notRequester: z.boolean().optional(),
  /** When it expires undecided (the run's `interruptTimeout`), if it does. */
  expiresAt: z.string().optional(),
});
export type HoldVotes = z.infer<typeof HoldVotesSchema>;

/** The reply of the `resume` update. */
export const DecisionAcceptedSchema = z.object({
  interruptId: z.string(),
  /** Every hold this decision answered (a shared decision answers all holds of its middleware). */
  decided: z.array(z.string()),
  /** For a hold put to a vote (docs/auth.md) that this vote did not decide: its votes now. */
  votes: HoldVotesSchema.optional(),
});
export type DecisionAccepted = z.infer<typeof DecisionAcceptedSchema>;

/** How a decision reached the run. */
export const DecisionRouteSchema = z.enum([
  /** The `resume` update (validated before it was accepted). */
  'update',
  /** The `resume` signal. */
  'signal',
  /** Sent on by the run above, which took it (`forwardedFrom`). */
  'forwarded',
  /** In the input of a run that resumes an interrupted one (interruptMode 'return'). */
  'resume',
  /** Nobody decided in time: the hold timed out (onInterruptTimeout 'deny'). */
  'timeout',
]);
export type DecisionRoute = z.infer<typeof DecisionRouteSchema>;

/** A decision a run took, as its status, its result and its history keep it (who approved book_train, when, how). */
export const DecisionRecordSchema = z.object({
  interruptId: z.string(),
  kind: z.string(),
  toolName: z.string().optional(),
  ref: z.string().optional(),
  /** What was decided, in one word. */
  decision: z.enum(['approved', 'denied', 'respond', 'restart']),
  /** Who decided, as the decision said (`--as` on the CLI, the client's identity); absent when it did not say. */
  decidedBy: z.string().optional(),
  /** When the run took it (the workflow's clock, ISO 8601). */
  at: z.string(),
  route: DecisionRouteSchema,
  /** With route `forwarded`: the run that sent it on. */
  forwardedFrom: z.string().optional(),
  reason: z.string().optional(),
  /** A restart's payload (when its JSON is at most 1 KiB). */
  payload: z.unknown().optional(),
  /** For a hold answered by a decision sent for another hold (a shared decision): that hold's id. */
  sharedWith: z.string().optional(),
  /** True when a keel server's proof vouched for `decidedBy` (a hold bound by approver rules). */
  verified: z.boolean().optional(),
  /** For a hold put to a vote: every vote it took, each from a verified decider. */
  votes: z.array(VoteSchema).optional(),
});
export type DecisionRecord = z.infer<typeof DecisionRecordSchema>;

/** How many decisions a run's status and result keep (the latest). */
export const KEPT_DECISIONS = 100;

/** How large a restart payload may be to be kept in a decision record. */
const RECORDED_PAYLOAD_CHARS = 1024;

/** What a decision says, in one word. */
export function decisionWord(body: DecisionBody): DecisionRecord['decision'] {
  if ('approved' in body) return body.approved ? 'approved' : 'denied';
  return 'respond' in body ? 'respond' : 'restart';
}

/** The record of a decision on hold `hold` (its id, kind, tool and ref), taken by `route` now. */
export function decisionRecord(
  hold: { id: string; kind: string; toolName?: string; ref?: string },
  body: DecisionBody & { decidedBy?: string; forwardedFrom?: string },
  route: DecisionRoute,
  extra: { sharedWith?: string; at?: string } = {},
): DecisionRecord {
  const payload = 'restart' in body ? body.restart : undefined;
  const payloadText = payload === undefined ? undefined : JSON.stringify(payload);
  return {
    interruptId: hold.id,
    kind: hold.kind,
    ...(hold.toolName !== undefined ? { toolName: hold.toolName } : {}),
    ...(hold.ref !== undefined ? { ref: hold.ref } : {}),
    decision: decisionWord(body),
    ...(body.decidedBy !== undefined ? { decidedBy: body.decidedBy } : {}),
    at: extra.at ?? new Date().toISOString(),
    route,
    ...(route === 'forwarded' && body.forwardedFrom !== undefined ? { forwardedFrom: body.forwardedFrom } : {}),
    ...('reason' in body && body.reason !== undefined ? { reason: body.reason } : {}),
    ...(payloadText !== undefined && payloadText.length <= RECORDED_PAYLOAD_CHARS ? { payload } : {}),
    ...(extra.sharedWith !== undefined ? { sharedWith: extra.sharedWith } : {}),
  };
}
