/**
 * The `deliverHoldNotice` activity (docs/notify.md): POSTs one hold notice to one webhook of
 * `notify:`, as keel's JSON event or as a Slack message, signed with the webhook's secret
 * (`X-Keel-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`) so the receiver can
 * tell it from a forgery and refuse a replay. A raised hold's notice carries Approve and Deny
 * links when `serve.publicUrl` says where keel serve is. A webhook that does not answer 2xx within
 * 10 s fails the attempt, which Temporal retries (the delivery workflow's policy). Node side.
 */
import { votesText } from '../../../core/approvers';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../../../config/load';
import type { KeelConfig, NotifyTarget } from '../../../config/schema';
import { durationMs } from '../../../core/duration';
import { DeliverNoticeInputSchema, NOTICE_WORKFLOW, type DeliverNoticeInput, type HoldNotice } from '../../../core/hold-notices';
import { KeelError } from '../../../core/errors';
import { describeZodError } from '../../../core/schema-errors';
import { inputFingerprint, signDecisionLink, type LinkAction } from '../../../security/decision-links';
import type { SigningKeys } from '../../../security/signing-keys';
import { InfrastructureError } from '../../../activities/infrastructure-error';
import { assertCalledByRun } from '../../../activities/called-by-run';
import type { ActivityImplementation, FeatureActivityDependencies } from '../../../activities/feature-activity';
import { GENERATE_WORKFLOW } from '../../../core/protocol';
import { deliverHoldNoticeDoor } from '../notice-door';

/** A webhook with its secret read from the environment. */
export interface NotifyWebhook extends NotifyTarget {
  secretValue: string;
}

/** The webhooks of `notify:`, each with its secret; a ConfigError naming the first whose variable is unset. */
export function notifyWebhooks(targets: readonly NotifyTarget[], env: NodeJS.ProcessEnv = process.env): NotifyWebhook[] {
  return targets.map((target, index) => {
    const secretValue = env[target.secret];
    if (!secretValue)
      throw new ConfigError(
        `notify[${index}].secret: the environment variable ${target.secret} is not set (it holds the secret the notices to ${target.url} are signed with)`,
      );
    return { ...target, secretValue };
  });
}

/** The signature header of `body` sent at `seconds` (unix time). */
export function noticeSignature(secret: string, body: string, seconds: number): string {
  return `t=${seconds},v1=${createHmac('sha256', secret).update(`${seconds}.${body}`).digest('hex')}`;
}

/**
 * True when `header` (X-Keel-Signature) signs `body` with `secret` and was made within
 * `toleranceSeconds` of now: what a receiver checks before it trusts a notice.
 */
export function verifyNoticeSignature({
  body,
  header,
  secret,
  toleranceSeconds = 300,
  now = Date.now(),
}: {
  body: string;
  header: string | null | undefined;
  secret: string;
  toleranceSeconds?: number;
  now?: number;
}): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? '');
  if (!match) return false;
  const seconds = Number(match[1]);
  if (Math.abs(now / 1000 - seconds) > toleranceSeconds) return false;
  const expected = Buffer.from(noticeSignature(secret, body, seconds).slice(`t=${seconds},v1=`.length), 'hex');
  const given = Buffer.from(match[2]!, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** What delivering needs of the worker. */
export interface NoticeScope {
  webhooks: readonly NotifyWebhook[];
  serve: Pick<KeelConfig['serve'], 'publicUrl' | 'linkTtl'> | undefined;
  keys: () => SigningKeys;
}

/** The notices that ask someone to decide (raised; escalated to more people; a vote that left it waiting). */
const ASKING = new Set<HoldNotice['type']>(['hold.raised', 'hold.escalated', 'hold.voted']);

/** The Approve and Deny links of a hold that waits, when keel serve's public address is known. */
async function linksOf({ serve, keys }: NoticeScope, notice: HoldNotice): Promise<Record<LinkAction, string> | undefined> {
  if (!ASKING.has(notice.type) || !serve?.publicUrl) return undefined;
  const ttlMs = durationMs(serve.linkTtl) ?? 86_400_000;
  const base = serve.publicUrl.replace(/\/+$/, '');
  const link = async (action: LinkAction) =>
    `${base}/decide/${await signDecisionLink(keys(), { runId: notice.runId, holdId: notice.hold.id, action, input: inputFingerprint(notice.hold.input) }, ttlMs)}`;
  return { approve: await link('approve'), deny: await link('deny') };
}

/** The first line of a notice as Slack shows it. */
function headlineOf({ type, agent, hold, decision }: HoldNotice): string {
  const question = hold.question ?? `may ${hold.toolName ?? 'the held call'} run?`;
  if (type === 'hold.raised') return `*${agent}* waits: ${question}`;
  if (type === 'hold.escalated') return `*${agent}* still waits, escalated to ${hold.votes?.escalatedTo?.join(', ') ?? 'more approvers'}: ${question}`;
  if (type === 'hold.voted') {
    const last = hold.votes?.cast.at(-1);
    return `*${agent}*: ${question} ${last ? `${last.by} ${last.approved ? 'approved' : 'denied'}` : 'a vote'}, waiting for more`;
  }
  if (type === 'hold.expired') return `*${agent}*: ${question} expired${decision?.reason ? ` (${decision.reason})` : ''}`;
  const by = decision?.votes?.length ? decision.votes.map((vote) => vote.by).join(', ') : decision?.decidedBy;
  return `*${agent}*: ${question} ${decision?.decision ?? 'decided'}${by ? ` by ${by}` : ''}`;
}

/** A notice as a Slack message: the question, the input, the votes, and Approve and Deny link buttons. */
function slackMessage(notice: HoldNotice, links: Record<LinkAction, string> | undefined): Record<string, unknown> {
  const { hold } = notice;
  const headline = headlineOf(notice);
  const votes = hold.votes ? votesText(hold.votes) : undefined;
  const input = JSON.stringify(hold.input ?? {}, null, 2);
  return {
    text: headline.replace(/\*/g, ''),
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: headline } },
      ...(votes ? [{ type: 'context', elements: [{ type: 'mrkdwn', text: votes }] }] : []),
      {
        type: 'section',
        text: { type: 'mrkdwn', text: `\`${hold.toolName ?? hold.kind}\` \`\`\`${input.length > 2800 ? `${input.slice(0, 2800)}…` : input}\`\`\`` },
      },
      { type: 'context', elements: [{ type: 'mrkdwn', text: `run ${notice.runId} · hold ${hold.id}` }] },
      ...(links
        ? [
            {
              type: 'actions',
              elements: [
                { type: 'button', text: { type: 'plain_text', text: 'Approve' }, style: 'primary', url: links.approve, action_id: 'approve' },
                { type: 'button', text: { type: 'plain_text', text: 'Deny' }, style: 'danger', url: links.deny, action_id: 'deny' },
              ],
            },
          ]
        : []),
    ],
  };
}

/** Posts one notice to one webhook; throws (retried) when it does not take it. */
export async function deliverHoldNotice(scope: NoticeScope, input: DeliverNoticeInput): Promise<void> {
  // Checked as it crosses into the worker: a delivery workflow can be started by anyone with the `temporal` CLI.
  const parsed = DeliverNoticeInputSchema.safeParse(input);
  if (!parsed.success) throw new KeelError('INVALID_ARGUMENT', `a hold notice keel does not send: ${describeZodError(parsed.error)}`);
  const { id, notice, target } = parsed.data;
  const webhook = scope.webhooks[target];
  // The worker's notify: list changed since the run was resolved: nothing to send to.
  if (!webhook) return;
  const links = await linksOf(scope, notice);
  const body = JSON.stringify(webhook.format === 'slack' ? slackMessage(notice, links) : { id, ...notice, ...(links ? { links } : {}) });
  let response: Response;
  try {
    response = await fetch(webhook.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-keel-event': notice.type,
        'x-keel-delivery': id,
        'x-keel-signature': noticeSignature(webhook.secretValue, body, Math.floor(Date.now() / 1000)),
      },
      body,
      signal: AbortSignal.timeout(10_000),
    });
  } catch (error) {
    throw new InfrastructureError(`notice ${notice.type} for ${webhook.url} not delivered: ${(error as Error).message}`);
  }
  await response.body?.cancel().catch(() => undefined);
  if (!response.ok) throw new InfrastructureError(`notice ${notice.type} for ${webhook.url} not taken: HTTP ${response.status}`);
}

/** Each worker's delivery scope, made once from its dependencies (the same object for every call of one worker). */
const scopes = new WeakMap<FeatureActivityDependencies, NoticeScope>();

/** What delivering needs of the worker: its webhooks (each with its secret, read once), where keel serve is, its signing keys. */
function noticeScope(dependencies: FeatureActivityDependencies): NoticeScope {
  let scope = scopes.get(dependencies);
  if (!scope) {
    const { config, keys } = dependencies;
    scope = { webhooks: notifyWebhooks(config?.notify ?? []), serve: config?.serve, keys };
    scopes.set(dependencies, scope);
  }
  return scope;
}

/** Notify's activity, as the worker registers it: a webhook whose secret is missing refuses the worker at its start, not at the first hold. */
export const notifyActivities: readonly ActivityImplementation[] = [
  {
    name: deliverHoldNoticeDoor.name,
    check: (dependencies) => void noticeScope(dependencies),
    call: async (input, dependencies) => {
      assertCalledByRun(deliverHoldNoticeDoor.name, [GENERATE_WORKFLOW, NOTICE_WORKFLOW]);
      // Parsed by deliverHoldNotice itself, which says what a forged notice got wrong.
      await deliverHoldNotice(noticeScope(dependencies), input as DeliverNoticeInput);
    },
  },
];
